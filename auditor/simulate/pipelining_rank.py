"""Simulated torch.distributed.pipelining ranks: the installed torch's own schedule classes on
gloo, with stand-in stages of the real activation shape, each rank recorded.

Run as `python -m auditor.simulate.pipelining_rank SPEC.json`. As `auditor.simulate.rank` does for
megatron-core, the process imports torch's pipelining once, unrecorded, and forks one child per
rank; each child arms the recorder (`auditor.dynamic.session`), so every op the schedule issues
lands in `rank-N.jsonl` like a real run's. The schedule is the class torch's
`get_schedule_class(NAME)` returns, or `_PipelineScheduleRuntime` loading a CSV order, built as
torchtitan's `_build_pipeline_schedule` builds it (torchtitan 0.3.0
torchtitan/distributed/pipeline_parallel.py), over the stages a rank holds: one for
single-stage schedules, `rank + i * PP` for looped ones, `rank` and `2 * PP - 1 - rank` for the
V-shaped ones (`stage_ids_this_rank`). A stand-in stage returns `input * weight`, so activations
and gradients have the shape (micro-batch size, sequence length, hidden size) and dtype of the
model's. A schedule torch refuses to build (torch 2.13.0: Schedule1F1B with fewer micro-batches
than stages, a count that is not a multiple of the rounds) is the run's start-up error: the rank
writes torch's message as `refused` and issues no op.

SPEC keys: pipeline_size, schedule, csv (a CSV order's path, or null), stages_per_rank (null:
torchtitan's fallback, 1 for a single-stage schedule, else 2), microbatches, shape, dtype, store
(a `file://` rendezvous), out (results), record_env (the recorder's P2PAUDIT_* variables).
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


def stage_indices(schedule: type, rank: int, pp: int, per_rank: int | None) -> list[int]:
    """The stage indices rank `rank` holds under `schedule` (torchtitan's placement for each
    kind; `per_rank` None: its fallback)."""
    from torch.distributed.pipelining.schedules import PipelineScheduleSingle

    if issubclass(schedule, PipelineScheduleSingle):
        return [rank]
    if schedule.__name__ in V_SCHEDULES:
        return [rank, 2 * pp - 1 - rank]
    return [rank + i * pp for i in range(2 if per_rank is None else per_rank)]


def build(spec: dict[str, Any], stages: list[Any], loss_fn: Any) -> Any:
    """The schedule as torchtitan's builder makes it; raises what torch raises for a bad one."""
    from torch.distributed.pipelining.schedules import (
        PipelineScheduleMulti,
        _PipelineScheduleRuntime,
        get_schedule_class,
    )

    n = spec["microbatches"]
    schedule_class = _PipelineScheduleRuntime if spec.get("csv") else get_schedule_class(spec["schedule"])
    if issubclass(schedule_class, PipelineScheduleMulti):
        schedule = schedule_class(stages, n_microbatches=n, loss_fn=loss_fn, scale_grads=False)
    else:
        schedule = schedule_class(stages[0], n_microbatches=n, loss_fn=loss_fn, scale_grads=False)
    if spec.get("csv"):
        schedule._load_csv(spec["csv"])
    return schedule


def run_rank(spec: dict[str, Any], rank: int) -> None:
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import get_schedule_class

    pp, n = spec["pipeline_size"], spec["microbatches"]
    out = Path(spec["out"], f"result-{rank}.json")
    dist.init_process_group("gloo", init_method=spec["store"], rank=rank, world_size=pp)
    # Every rank's gloo mesh is whole before any may leave: a rank whose schedule torch refuses
    # exits at once, and a peer still connecting would crash with "Connection closed by peer".
    dist.barrier()
    dtype = DTYPES[spec["dtype"]]

    def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        # In the activations' dtype: the gradient has their shape and dtype all the same, at a
        # fraction of the cost of fp32 copies of two (micro-batch, seq, hidden) tensors.
        return (output - target).mean()

    try:
        named = get_schedule_class(spec["schedule"])
        indices = stage_indices(named, rank, pp, spec.get("stages_per_rank"))
        total = pp * len(indices)
        stages = [PipelineStage(StandIn(dtype), i, total, torch.device("cpu")) for i in indices]
        schedule = build(spec, stages, loss_fn)
    except (ValueError, AssertionError, NotImplementedError) as exc:
        refused = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        out.write_text(json.dumps({"rank": rank, "refused": refused}) + "\n", encoding="utf-8")
        dist.destroy_process_group()
        return
    mb, seq, hidden = spec["shape"]
    first, last = 0 in indices, total - 1 in indices
    # The whole batch only where a stage reads it: the first stage's input, the last's target.
    batch = torch.ones((mb * n, seq, hidden), dtype=dtype) if first or last else None
    # As torchtitan's train step calls it (return_outputs=False): no merged copy of the outputs.
    schedule.step(*((batch,) if first else ()), target=batch if last else None,
                  losses=[] if last else None, return_outputs=False)
    result = {"rank": rank, "schedule": type(schedule).__name__, "stages": indices}
    out.write_text(json.dumps(result) + "\n", encoding="utf-8")
    dist.destroy_process_group()


def main(spec_path: str) -> int:
    """The ranks of `spec_path`'s simulation, forked (simulate.forked.run_forked)."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    import torch.distributed.pipelining  # noqa: F401  (once, before the fork)
    return run_forked(spec, run_rank)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
