"""A simulated pipelining rank steps torch's schedule as torchtitan's train step does
(torchtitan 0.2.2 and 0.3.0 torchtitan/train.py Trainer.forward_backward_step:
`pp_schedule.step(..., losses=losses, return_outputs=False)`): no merged copy of the last
stage's outputs, and a loss in the activations' dtype, so a PP=4 x 8 micro-batch run at
llama3-8B width (benchmarks/bench_simulate.py) makes no fp32 copies of its activations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from torch.distributed.pipelining.schedules import PipelineScheduleSingle

from auditor.simulate import pipelining_rank


def test_the_rank_steps_the_schedule_as_torchtitan_does(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch):
    calls: list[dict[str, Any]] = []
    step = PipelineScheduleSingle.step

    def recorded_step(self, *args, **kwargs):
        calls.append(kwargs)
        return step(self, *args, **kwargs)

    monkeypatch.setattr(PipelineScheduleSingle, "step", recorded_step)
    spec = {"pipeline_size": 1, "schedule": "1F1B", "stages_per_rank": None, "microbatches": 2,
            "shape": [1, 4, 8], "dtype": "bfloat16", "store": f"file://{tmp_path / 'store'}",
            "out": str(tmp_path)}
    pipelining_rank.run_rank(spec, 0)  # one rank holds the only stage: first and last
    (kwargs,) = calls
    assert kwargs["return_outputs"] is False
    losses = kwargs["losses"]
    assert len(losses) == 2 and all(loss.dtype == pipelining_rank.DTYPES["bfloat16"]
                                    for loss in losses)
    assert '"schedule": "Schedule1F1B"' in (tmp_path / "result-0.json").read_text()
