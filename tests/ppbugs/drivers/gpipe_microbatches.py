"""torch.distributed.pipelining's ScheduleGPipe on 2 gloo ranks whose stages disagree on the
microbatch count (torchtitan #775, https://github.com/pytorch/torchtitan/issues/775, fixed by
torchtitan PR #781: the count was computed per stage): stage 0 runs 2, stage 1 runs 4. The run
hangs until gloo's timeout (GLOO_TIMEOUT seconds). Recorded by tests/ppbugs/test_count_mismatch.py."""

import datetime
import os

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe


def main() -> None:
    timeout = datetime.timedelta(seconds=int(os.environ.get("GLOO_TIMEOUT", "20")))
    dist.init_process_group("gloo", timeout=timeout)
    rank = dist.get_rank()
    stage = PipelineStage(torch.nn.Linear(16, 16), rank, 2, torch.device("cpu"))
    microbatches = 2 if rank == 0 else 4
    schedule = ScheduleGPipe(stage, n_microbatches=microbatches,
                             loss_fn=lambda y, t: ((y - t) ** 2).mean())
    if rank == 0:
        schedule.step(torch.randn(2 * microbatches, 16))
    else:
        schedule.step(target=torch.randn(2 * microbatches, 16), losses=[])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
