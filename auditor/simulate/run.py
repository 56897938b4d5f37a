"""Run the plan's pipeline column on CPU, recorded: one process that forks a gloo rank per stage
(`auditor.simulate.rank` for megatron-core's schedule, `auditor.simulate.pipelining_rank` for
torch's), each writing `trace/rank-N.jsonl` through the recorder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.dynamic import record
from auditor.simulate import machine
from auditor.simulate.plan import SimulationPlan
from auditor.simulate.schedule_flags import SCHEDULE_FLAGS
from auditor.simulate.titan_plan import RUNNER as PIPELINING

# A rank that waits this long in one op writes its hang file (gloo completes every order a
# schedule issues, so this only fires on a real fault); the whole run is stopped after TIMEOUT.
HANG_AFTER_S = 60.0
TIMEOUT_S = 600.0


@dataclass
class Recorded:
    trace: Path
    status: int  # the rank process's exit status (128+N: a rank, or it, killed by signal N)
    output: str  # its stderr, for a failure's message
    seconds: float
    killed: str | None = None  # what killed a rank (the kernel's OOM killer...), in words
    results: list[dict] = field(default_factory=list)  # each rank's result-N.json


def run(p: SimulationPlan, workdir: Path) -> Recorded:
    """Run the schedule of `p` in `workdir` (which must be empty); returns the trace directory.
    The ranks' rendezvous file and results live apart from the trace: a trace that fills its
    filesystem stops recording, never the ranks."""
    with tempfile.TemporaryDirectory(prefix="p2paudit-ranks-") as own:
        recorded = _run(p, workdir, Path(own))
        recorded.results = [json.loads(f.read_text(encoding="utf-8"))
                            for f in sorted(Path(own).glob("result-*.json"))]
        return recorded


def _spec(p: SimulationPlan) -> dict[str, Any]:
    """What the rank program of `p.runner` reads (see its module's docstring)."""
    if p.runner == PIPELINING:
        seq, mbs, hidden = p.shape
        return {"pipeline_size": p.get("pipeline_size"), "schedule": p.get("schedule"),
                "csv": p.get("schedule_csv") or None, "stages_per_rank": p.get("virtual_stages"),
                "microbatches": p.get("microbatches"), "shape": [mbs, seq, hidden],
                "dtype": p.get("dtype")}
    return {
        "paths": [str(p.megatron_root)],
        "stand_ins": p.stand_ins,
        "pipeline_size": p.get("pipeline_size"),
        "virtual_stages": p.get("virtual_stages"),
        "microbatches": p.get("microbatches"),
        "shape": list(p.shape),
        "dtype": p.get("dtype"),
        "patches": [{"path": x.path, "target": x.target,
                     "module": x.installer.rpartition(".")[0],
                     "function": x.installer.rpartition(".")[2]} for x in p.patches if x.applied],
        **{k: bool(p.get(k)) for k in SCHEDULE_FLAGS},
    }


def _run(p: SimulationPlan, workdir: Path, own: Path) -> Recorded:
    trace = workdir / "trace"
    env = record.environment(trace, HANG_AFTER_S, None, base={})
    spec = {**_spec(p), "store": f"file://{own / 'store'}", "out": str(own),
            "record_env": {k: v for k, v in env.items() if k.startswith("P2PAUDIT_")}}
    trace.mkdir(parents=True)
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("P2PAUDIT_")}
    child_env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[2])]
        + [x for x in child_env.get("PYTHONPATH", "").split(os.pathsep) if x])
    child_env.setdefault("PYTHONWARNINGS", "ignore")
    kills_before = machine.oom_kills()
    started = time.perf_counter()
    # Its own session, so that a run past TIMEOUT_S is stopped with every rank it forked.
    program = "auditor.simulate.pipelining_rank" if p.runner == PIPELINING else "auditor.simulate.rank"
    child = subprocess.Popen([sys.executable, "-m", program, str(spec_path)],
                             env=child_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        _, err = child.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        _, err = child.communicate()
        return Recorded(trace, 124, err + f"\nstopped after {TIMEOUT_S:g} s", TIMEOUT_S)
    status = child.returncode if child.returncode >= 0 else 128 - child.returncode
    return Recorded(trace, status, err, time.perf_counter() - started,
                    machine.killed_words(status, kills_before))
