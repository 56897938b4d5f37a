"""Each reproducer rank says what it is about to do before doing it (auditor/repro/progress.py),
and the launcher reads every rank's last state after killing the run: a rank killed at any moment
leaves its last complete state (the file is replaced atomically), a rank that never started reads
as None."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from auditor.repro.progress import DONE, ISSUING, PENDING, ReproProgress, read_states, state_path

RANK = """
import sys
from pathlib import Path
from auditor.repro.progress import DONE, ISSUING, PENDING, ReproProgress
p = ReproProgress(Path(sys.argv[1]), 1, 4)
p.phase("ops")
print("ready", flush=True)
i = 0
while True:  # until killed: every op's state, over and over
    for state in (ISSUING, PENDING, DONE):
        p.op(i % 4, state)
    p.waiting_for(i % 4)
    i += 1
"""


def test_states_as_a_rank_writes_them(tmp_path: Path) -> None:
    p = ReproProgress(tmp_path, 0, 3)
    p.phase("ops")
    p.op(0, ISSUING)
    p.op(0, DONE)
    p.op(1, PENDING)
    p.waiting_for(1)
    p.coalesced(0, False)
    p.error(RuntimeError("NCCL error: unhandled system error\nthe rest"))
    state = read_states(tmp_path, 2)[0]
    assert state is not None
    assert [o and o["state"] for o in state["ops"]] == [DONE, PENDING, None]
    assert state["waiting_for"] == 1 and state["coalesced"] == {"0": False}
    assert state["phase"] == "error" and state["error"] == "RuntimeError: NCCL error: unhandled system error"
    assert read_states(tmp_path, 2)[1] is None  # rank 1 never wrote


def test_a_rank_killed_at_any_moment_leaves_a_complete_state(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for delay in (0.0, 0.05, 0.2):
        proc = subprocess.Popen([sys.executable, "-c", RANK, str(tmp_path)], env=env, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        state = read_states(tmp_path, 2)[1]
        assert state is not None and state["phase"] == "ops"
        assert json.loads(state_path(tmp_path, 1).read_text())["rank"] == 1
