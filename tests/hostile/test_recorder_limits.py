"""`simulate` and `--jobs` within what the machine holds (issue 28 item 13, issue 22 item 13).

Before: `simulate --set pipeline_model_parallel_size=64` forked 64 torch ranks, the kernel's OOM
killer fired, and the message was "status 247: no output"; `--jobs 200` started 200 workers on 2
cores; a run the scan knew could not start was simulated anyway. Now the memory a simulation
needs is estimated (auditor/simulate/machine.py, calibrated on a measured rank) before any rank
is forked, a run that would not fit is not started, a rank killed by the OOM killer is named so,
and `--jobs` is capped at the cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Shipped example, in the shape of NVIDIA/Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh
# (core_v0.17.0); --set makes it the PP=64 run of the issue.
MLM = REPO / "examples" / "megatron_lm_gpt_pp2.sh"


def p2paudit(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, check=False,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.mark.wheels
def test_simulate_that_cannot_fit_is_not_started() -> None:
    """PP=64 with 64 micro-batches of 128 MiB: hundreds of GiB by any estimate, on any machine
    that runs the tests; refused in about the time of the scan, no rank forked."""
    started = time.monotonic()
    done = p2paudit("simulate", "--config", str(MLM), "--set", "pipeline_model_parallel_size=64",
                    "--set", "tensor_model_parallel_size=1", "--set", "num_layers=64",
                    "--set", "world_size=64", "--set", "hidden_size=65536", "--microbatches", "64")
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("p2paudit simulate: INCONCLUSIVE: not simulated; 64 rank processes")
    assert "GiB available" in last and "core(s)" in last
    assert time.monotonic() - started < 60


@pytest.mark.wheels
def test_a_run_that_does_not_start_is_not_simulated() -> None:
    """examples/glm5_1_lora_pp8.sh: 78 layers megatron-core cannot split over PP=8."""
    done = p2paudit("simulate", "--config", str(REPO / "examples" / "glm5_1_lora_pp8.sh"),
                    "--torch", "2.11.0")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith(
        "p2paudit simulate: DOES NOT START: not simulated; megatron-core stops the run before "
        "the schedule: 78 layers with PP=8")


@pytest.fixture
def memory_cgroup():
    """A child memory cgroup (v1 or v2) limited to 200 MiB; skips where none can be made."""
    if os.geteuid() != 0:
        pytest.skip("making a memory cgroup needs root")
    name = f"p2paudit-test-{uuid.uuid4().hex[:6]}"
    where = None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if "memory" in controllers.split(","):
            where, limit = Path("/sys/fs/cgroup/memory") / path.lstrip("/") / name, "memory.limit_in_bytes"
        elif hierarchy == "0" and controllers == "" and where is None:
            where, limit = Path("/sys/fs/cgroup") / path.lstrip("/") / name, "memory.max"
    try:
        assert where is not None
        where.mkdir()
        (where / limit).write_text(str(200 << 20))
    except (AssertionError, OSError) as exc:
        pytest.skip(f"cannot make a memory cgroup here: {exc}")
    try:
        yield where
    finally:
        time.sleep(0.2)
        where.rmdir()


PROBE = textwrap.dedent("""
    import os, signal, subprocess, sys
    from auditor.simulate import machine
    before = machine.oom_kills()
    hog = "x = bytearray(600 << 20); x[::4096] = b'1' * len(x[::4096])"
    if sys.argv[1] == "oom":
        status = subprocess.run([sys.executable, "-c", hog]).returncode
    else:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        child.send_signal(signal.SIGKILL)
        status = child.wait()
    print(machine.killed_words(128 - status, before))
""")


@pytest.mark.parametrize("how", ["oom", "sigkill"])
def test_an_oom_kill_is_named_as_one(memory_cgroup: Path, how: str) -> None:
    """A real OOM kill (a child allocating 600 MiB in a 200 MiB cgroup), against a plain
    SIGKILL: both exit -9, only the first moved the kernel's counter."""
    enter = f"echo $$ > {memory_cgroup / 'cgroup.procs'} && exec \"$0\" \"$@\""
    done = subprocess.run(["sh", "-c", enter, sys.executable, "-c", PROBE, how], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    if how == "oom":
        assert "killed by the kernel's OOM killer (out of memory: 1 OOM kill(s)" in done.stdout
    else:
        assert "killed by SIGKILL" in done.stdout and "did not change" in done.stdout


def test_jobs_are_capped_at_the_cores(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("import torch.distributed as dist\n"
                                     "def f(t):\n    dist.send(t, 1)\n")
    done = p2paudit("sites", f"mine={tmp_path}", "--jobs", "200", "--format", "json")
    cores = len(os.sched_getaffinity(0))
    assert done.returncode == 0, done.stderr
    assert f"--jobs 200 is more than this machine's {cores} usable core(s): using {cores}" \
        in done.stderr
    bad = p2paudit("sites", f"mine={tmp_path}", "--jobs", "many")
    assert bad.returncode == 2 and "--jobs" in bad.stderr
