"""pytorch #172668: torch.distributed.pipelining's interleaved 1F1B with its receives deferred, 2 gloo ranks.

pp=2, 4 stages (rank r holds stages r and r+2), 4 micro-batches, as in the issue. The stages are
elementwise (x * w) so that only the schedule's own P2P order matters; each activation is
ROWS x HIDDEN float32 = 16 MiB, above the network transport's measured 12 MiB and below NVLink's
measured 32 MiB (docs/transport-semantics.md). Run under torchrun:
    torchrun --nproc_per_node 2 driver.py MODE
MODE:
  asap            torch's default lowering (receives as early as possible): the released schedule
  naive-deferral  each receive moved to just before its consumer and nothing else: the deferral
                  tried in the issue thread, which hung on 2 nodes. Built with torch's own
                  _defer_recv_ops with the rank-parity flush switched off (no peer rank is ever
                  above the current rank)
  rank-parity     torch >= 2.13's fix: ScheduleInterleaved1F1B(defer_pp_recv=True)
gloo completes every mode (an isend does not block the receive issued after it); whether NCCL
hangs is the replay's question: p2paudit report --transport net (2 nodes) or nvlink (1 node).
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage, ScheduleInterleaved1F1B
from torch.distributed.pipelining.schedules import _defer_recv_ops

ROWS, HIDDEN = 4096, 1024
MICROBATCHES = 4
MODES = ("asap", "naive-deferral", "rank-parity")


class Scale(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(HIDDEN))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.w


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "asap"
    if mode not in MODES:
        raise SystemExit(f"driver.py: MODE must be one of {', '.join(MODES)}, not {mode!r}")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("CASE_TIMEOUT", "60"))))
    rank, world = dist.get_rank(), dist.get_world_size()
    n_stages = 2 * world
    stages = [PipelineStage(Scale(), index, n_stages, torch.device("cpu")) for index in (rank, rank + world)]
    schedule = ScheduleInterleaved1F1B(stages, n_microbatches=MICROBATCHES, loss_fn=lambda out, target: (out - target).pow(2).mean(),
                                       defer_pp_recv=mode == "rank-parity")
    if mode == "naive-deferral":
        schedule.pipeline_order_with_comms = _defer_recv_ops(schedule.pipeline_order_with_comms, stage_to_rank=lambda stage: -1)
    batch = torch.ones(MICROBATCHES * ROWS, HIDDEN)
    if rank == 0:
        schedule.step(batch)
    else:
        schedule.step(target=torch.zeros_like(batch))
    order = " ".join(str(a) for a in schedule.pipeline_order_with_comms[rank] if a is not None)
    print(f"rank {rank} ({mode}): done; order {order}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
