"""PP-BugBench driver for pytorch/torchtitan #774 (fixed by torchtitan PR #817): ScheduleZBVZeroBubble
over stages placed loop-style. It calls torch's own schedule (torch 2.13.0
torch/distributed/pipelining/schedules.py ScheduleZBVZeroBubble, which maps stage s to rank by the
V shape: rank r holds r and 2*PP-1-r) over stand-in stages; only the placement is the case's:

- buggy: torchtitan before PR #817 placed every looped schedule's stages as r, r+PP (the issue
  thread: "In titan we do interleaved by default"), so the schedule's stage->rank map disagrees with
  where the stages are and the stages' P2P ops meet the wrong ops on their peer;
- fixed: the V placement torchtitan uses since (torchtitan 0.1.0 models/llama3/infra/pipeline.py
  pipeline_llama_manual_split `style = "v" if schedule_class == ScheduleZBVZeroBubble`; 0.3.0
  distributed/pipeline_parallel.py _get_pp_rank_to_stage_indices_mapping).

    torchrun --nproc_per_node 2 driver.py buggy|fixed
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining.schedules import ScheduleZBVZeroBubble


class StandIn(torch.nn.Module):
    """A stage of the activation's shape: output = input * weight."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


def main() -> None:
    side = sys.argv[1]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("CASE_TIMEOUT", "30"))))
    rank, pp = dist.get_rank(), dist.get_world_size()
    placed = [rank, rank + pp] if side == "buggy" else [rank, 2 * pp - 1 - rank]
    stages = [PipelineStage(StandIn(), i, 2 * pp, torch.device("cpu")) for i in placed]
    schedule = ScheduleZBVZeroBubble(stages, 4, loss_fn=lambda out, target: (out - target).pow(2).mean())
    batch = torch.ones(4, 16, 32)
    first, last = 0 in placed, 2 * pp - 1 in placed
    schedule.step(*((batch,) if first else ()), target=batch if last else None, losses=[] if last else None)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
