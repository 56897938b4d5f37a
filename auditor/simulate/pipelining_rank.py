"""Simulated torch.distributed.pipelining ranks: the installed torch's own schedule classes on
gloo, with stand-in stages of the real activation shape, each rank recorded.

Run as `python -m auditor.simulate.pipelining_rank SPEC.json`. As `auditor.simulate.rank` does for
megatron-core, the process imports torch's pipelining once, unrecorded, and forks one child per
rank; each child arms the recorder (`auditor.dynamic.session`), so every op the schedule issues
lands in `rank-N.jsonl` like a real run's. The schedule is the class torch's
`get_schedule_class(NAME)` returns (what torchtitan builds), over the stages a rank holds:
one for single-stage schedules, `rank + i * PP` for looped ones, `rank` and `2 * PP - 1 - rank`
for the V-shaped ones. A stand-in stage returns `input * weight`, so activations and gradients
have the shape (micro-batch size, sequence length, hidden size) and dtype of the model's.

SPEC keys: pipeline_size, schedule, stages_per_rank, microbatches, shape, dtype, store (a
`file://` rendezvous), out (results), record_env (the recorder's P2PAUDIT_* variables).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from auditor.simulate.forked import run_forked

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
V_SCHEDULES = frozenset({"ScheduleZBVZeroBubble", "ScheduleDualPipeV"})


class StandIn(torch.nn.Module):
    """A stage of the real activation shape: output = input * weight."""

    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones((), dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


def stage_indices(schedule: type, rank: int, pp: int, per_rank: int) -> list[int]:
    """The stage indices rank `rank` holds under `schedule` (torch's placement for each kind)."""
    from torch.distributed.pipelining.schedules import PipelineScheduleSingle

    if issubclass(schedule, PipelineScheduleSingle):
        return [rank]
    if schedule.__name__ in V_SCHEDULES:
        return [rank, 2 * pp - 1 - rank]
    return [rank + i * pp for i in range(per_rank)]


def run_rank(spec: dict[str, Any], rank: int) -> None:
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import (
        PipelineScheduleSingle,
        get_schedule_class,
    )

    pp, n = spec["pipeline_size"], spec["microbatches"]
    dist.init_process_group("gloo", init_method=spec["store"], rank=rank, world_size=pp)
    dtype = DTYPES[spec["dtype"]]
    schedule_class = get_schedule_class(spec["schedule"])
    indices = stage_indices(schedule_class, rank, pp, spec["stages_per_rank"])
    total = pp * len(indices)
    stages = [PipelineStage(StandIn(dtype), i, total, torch.device("cpu")) for i in indices]

    def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return (output.float() - target.float()).pow(2).mean()

    if issubclass(schedule_class, PipelineScheduleSingle):
        schedule = schedule_class(stages[0], n, loss_fn=loss_fn)
    else:
        schedule = schedule_class(stages, n, loss_fn=loss_fn)
    mb, seq, hidden = spec["shape"]
    batch = torch.ones((mb * n, seq, hidden), dtype=dtype)
    args = (batch,) if 0 in indices else ()
    last = total - 1 in indices
    schedule.step(*args, target=batch if last else None, losses=[] if last else None)
    result = {"rank": rank, "schedule": schedule_class.__name__, "stages": indices}
    Path(spec["out"], f"result-{rank}.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    dist.destroy_process_group()


def main(spec_path: str) -> int:
    """The ranks of `spec_path`'s simulation, forked (simulate.forked.run_forked)."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    import torch.distributed.pipelining  # noqa: F401  (once, before the fork)
    return run_forked(spec, run_rank)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
