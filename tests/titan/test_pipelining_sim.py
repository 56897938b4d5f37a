"""The installed torch's pipelining schedules run as recorded gloo ranks on CPU
(auditor/simulate/pipelining_rank.py): every rank's file records the schedule's P2P ops, each
ended, with the stand-in stage's activation shape; also with fewer micro-batches than stages."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.dynamic import record
from auditor.dynamic.trace import read_trace_dir

ROOT = Path(__file__).resolve().parent.parent.parent


def simulate(tmp_path: Path, pp: int, schedule: str, microbatches: int, shape: list[int],
             dtype: str = "float32") -> tuple[subprocess.CompletedProcess, Path, Path]:
    own, trace = tmp_path / "own", tmp_path / "trace"
    own.mkdir()
    env = record.environment(trace, 60.0, None, base={})
    spec = {"pipeline_size": pp, "schedule": schedule, "stages_per_rank": 2, "microbatches": microbatches,
            "shape": shape, "dtype": dtype, "store": f"file://{own / 'store'}", "out": str(own),
            "record_env": {k: v for k, v in env.items() if k.startswith("P2PAUDIT_")}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run([sys.executable, "-m", "auditor.simulate.pipelining_rank", str(tmp_path / "spec.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    return done, trace, own


@pytest.mark.heavy
@pytest.mark.parametrize("schedule,pp,microbatches", [
    ("1F1B", 2, 4), ("GPipe", 2, 4), ("Interleaved1F1B", 2, 4),
    ("GPipe", 4, 2),  # fewer micro-batches than stages
])
def test_schedule_runs_recorded_with_the_activation_shape(tmp_path, schedule, pp, microbatches):
    done, trace, own = simulate(tmp_path, pp, schedule, microbatches, [1, 16, 32])
    assert done.returncode == 0, done.stderr[-2000:]
    results = [json.loads(f.read_text()) for f in sorted(own.glob("result-*.json"))]
    assert [r["rank"] for r in results] == list(range(pp))
    t = read_trace_dir(trace)
    assert sorted(t.ranks) == list(range(pp))
    shapes = set()
    for rank in t.ranks.values():
        assert rank.complete and not rank.open_ops, rank.path
        p2p = [op for op in rank.head if op.get("phase") == "start" and op.get("kind") == "p2p"]
        assert p2p, rank.path
        shapes |= {tuple(op["shape"]) for op in p2p if op.get("shape")}
    assert (1, 16, 32) in shapes


@pytest.mark.heavy
def test_pp4_interleaved_with_8_microbatches_at_llama3_8b_width_within_60_s(tmp_path):
    start = time.monotonic()
    done, trace, _ = simulate(tmp_path, 4, "Interleaved1F1B", 8, [1, 2048, 4096], "bfloat16")
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.monotonic() - start <= 60
    assert sorted(read_trace_dir(trace).ranks) == [0, 1, 2, 3]
