"""Runs a reproducer under torchrun with an outer time limit, then judges it.

The limit counts from the first rank's first op, so torchrun's start-up does not eat into it (a
run that never gets that far is cut after STARTUP_LIMIT_S). At the limit every rank and torchrun
get SIGKILL: a rank inside a lazy NCCL communicator creation answers nothing gentler, and torchrun
starts each rank in a session of its own, so killing torchrun's group alone would leave them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import auditor
from auditor.dynamic.backends import backend
from auditor.dynamic.localranks import free_port
from auditor.errors import InputError
from auditor.repro.plan import ReproPlan, Spec
from auditor.repro.progress import read_states
from auditor.repro.rank import SPEC_ENV
from auditor.repro.verdict import Outcome, judge

STARTUP_LIMIT_S = 120.0
POLL_S = 0.1


def check_machine(spec: Spec) -> None:
    """InputError for a run this machine cannot make, before anything starts."""
    import torch

    if backend(spec.backend).device != "cuda":
        return
    if not torch.cuda.is_available():
        raise InputError("--backend nccl", "no CUDA device here; --backend gloo runs the CPU variant")
    gpus = torch.cuda.device_count()
    if spec.nproc > gpus:
        raise InputError("--nproc", f"{spec.nproc} NCCL ranks need {spec.nproc} GPUs, this "
                         f"machine has {gpus} (NCCL refuses two ranks on one GPU)")


def launch(spec: Spec, plan: ReproPlan, keep: Path | None = None) -> Outcome:
    run_dir = keep if keep is not None else Path(tempfile.mkdtemp(prefix="p2paudit-repro-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in run_dir.glob("rank-*.state.json"):
        stale.unlink()
    spec_path = run_dir / "spec.json"
    spec.save(spec_path)
    try:
        outcome = _run(spec, plan, run_dir, spec_path)
        if keep is not None:
            (run_dir / "verdict.json").write_text(json.dumps(outcome.to_json(), indent=1),
                                                  encoding="utf-8")
        elif outcome.status == "failed":  # the log goes with the run directory: show its end
            tail = (run_dir / "torchrun.log").read_text(errors="replace").splitlines()[-20:]
            print("\n".join(["torchrun's last lines:", *tail]), file=sys.stderr)
        return outcome
    finally:
        if keep is None:
            shutil.rmtree(run_dir, ignore_errors=True)


def _run(spec: Spec, plan: ReproPlan, run_dir: Path, spec_path: Path) -> Outcome:
    env = dict(os.environ)
    for name in plan.unset:
        env.pop(name, None)
    env.update(plan.env)
    env[SPEC_ENV] = str(spec_path)
    package_root = str(Path(auditor.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env.setdefault("OMP_NUM_THREADS", "1")
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={spec.nproc}",
               "--master_addr=127.0.0.1", f"--master_port={free_port()}",
               "-m", "auditor.repro.rank"]
    launched = time.time()
    killed_at = None
    with open(run_dir / "torchrun.log", "wb") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            while proc.poll() is None:
                time.sleep(POLL_S)
                states = read_states(run_dir, spec.nproc)
                starts = [s["t_ops"] for s in states.values() if s and s.get("t_ops")]
                now = time.time()
                if (starts and now - min(starts) > spec.timeout) or \
                        (not starts and now - launched > STARTUP_LIMIT_S):
                    killed_at = now
                    break
        finally:
            _kill(proc, read_states(run_dir, spec.nproc), everyone=proc.poll() is None)
    return judge(plan, read_states(run_dir, spec.nproc), killed_at)


def _kill(proc: subprocess.Popen, states: dict, everyone: bool) -> None:
    """SIGKILL the ranks (each leads its own session): all of them when the run is cut, else
    those that never finished; then torchrun's group."""
    for state in states.values():
        if state and (everyone or state["phase"] != "done"):
            for kill in (os.killpg, os.kill):
                try:
                    kill(state["pid"], signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()
