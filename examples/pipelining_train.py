"""A torch.distributed.pipelining training step, one function per schedule, as the pipelining
tutorial writes it (https://pytorch.org/docs/stable/distributed.pipelining.html): each rank
builds its PipelineStage and steps a schedule. `p2paudit scan` takes these functions as entry
points: `--target examples/pipelining_train.py --target torch --entry pipelining_train:train_1f1b`.
Run under `torchrun --nproc_per_node 2 examples/pipelining_train.py` (gloo on CPU)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch.distributed.pipelining import (
    PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B,
)

N_MICROBATCHES = 4


def _stage(index: int, num_stages: int) -> PipelineStage:
    return PipelineStage(torch.nn.Linear(8, 8), index, num_stages, torch.device("cpu"))


def train_1f1b(rank: int, world: int, batch: torch.Tensor, target: torch.Tensor) -> None:
    schedule = Schedule1F1B(_stage(rank, world), N_MICROBATCHES, loss_fn=torch.nn.functional.mse_loss)
    schedule.step(batch, target=target)


def train_gpipe(rank: int, world: int, batch: torch.Tensor, target: torch.Tensor) -> None:
    schedule = ScheduleGPipe(_stage(rank, world), N_MICROBATCHES, loss_fn=torch.nn.functional.mse_loss)
    schedule.step(batch, target=target)


def train_interleaved(rank: int, world: int, batch: torch.Tensor, target: torch.Tensor) -> None:
    stages = [_stage(rank + i * world, 2 * world) for i in range(2)]
    schedule = ScheduleInterleaved1F1B(stages, N_MICROBATCHES, loss_fn=torch.nn.functional.mse_loss)
    schedule.step(batch, target=target)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    for train in (train_1f1b, train_gpipe, train_interleaved):
        train(rank, world, torch.randn(8, 8), torch.randn(8, 8))
    dist.destroy_process_group()
