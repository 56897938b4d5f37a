"""torch.distributed.pipelining's Schedule1F1B on WORLD_SIZE gloo ranks, one Linear per stage,
4 microbatches: the stages infer shapes at the first step (PipelineStage._recv_meta /
_send_meta: recv_object_list / send_object_list, torch/distributed/pipelining/stage.py, torch
2.13.0), then run 1F1B. Recorded by tests/ppbugs/test_shape_inference.py."""

import datetime

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, Schedule1F1B


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


def main() -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    stage = PipelineStage(Block(), rank, world, torch.device("cpu"))
    schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=lambda y, t: ((y - t) ** 2).mean())
    x, target = torch.randn(8, 16), torch.randn(8, 16)
    if rank == 0:
        schedule.step(x)
    elif rank == world - 1:
        schedule.step(target=target, losses=[])
    else:
        schedule.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
