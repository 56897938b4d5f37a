"""torch.distributed.pipelining's Schedule1F1B on 2 gloo ranks (one stage each), as its docs use it.

Built as pytorch/pytorch v2.13.0 torch/distributed/pipelining/schedules.py (Schedule1F1B,
_step_microbatches: `_batch_p2p(...)` around the stages' get_fwd_send_ops / get_bwd_recv_ops)
and stage.py (PipelineStage._shape_inference: send_object_list / recv_object_list) run it: every
op's site is this file's `schedule.step` line; the line that chose it is torch's own.
    torchrun --nproc_per_node 2 pipelining_1f1b.py
"""

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B

MICROBATCHES = 2


def main() -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    stage = PipelineStage(nn.Linear(8, 8), rank, world, torch.device("cpu"))
    schedule = Schedule1F1B(stage, n_microbatches=MICROBATCHES,
                            loss_fn=lambda out, target: (out - target).pow(2).mean())
    batch = torch.ones(MICROBATCHES * 2, 8)
    if rank == 0:
        schedule.step(batch)
    else:
        schedule.step(target=torch.zeros_like(batch))
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
