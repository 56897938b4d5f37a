"""`p2paudit doctor` prints and saves the NCCL_DEBUG=INFO log of its own tiny job (NCCL backend),
and says so where there is none (gloo, CPU)."""

from __future__ import annotations

import pytest
import os
import subprocess
import sys
from pathlib import Path

from auditor.doctor import nccl_debug_env, nccl_log_lines
from auditor.errors import EXIT_FINDINGS

ROOT = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccllog"


@pytest.mark.heavy
def test_gloo_says_no_nccl_log_is_available_and_writes_none(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "auditor", "doctor", "--nproc", "2", "--backend",
                           "gloo"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == EXIT_FINDINGS, done.stderr  # gloo never coalesces
    assert "NCCL log: none: the gloo backend runs no NCCL" in done.stdout
    assert list(tmp_path.iterdir()) == []  # no log directory for a job without NCCL


def test_the_saved_log_is_one_file_per_process_and_its_statements_are_printed(tmp_path):
    env = nccl_debug_env(tmp_path)
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_FILE"] == f"{tmp_path}/nccl.%h.%p.log"
    lines = nccl_log_lines(sorted((LOGS / "seed-ib-2ch").glob("*.log")))
    text = "\n".join(lines)
    assert lines[0].startswith("NCCL log: saved to ") and "rank0.log" in lines[0]
    assert "NCCL 2.27.5+cuda12.9 (" in text and "via NET/IB point-to-point (" in text
    assert "2 p2p channels per peer" in text and "P2P chunk 131072 B" in text
    assert "--nccl-log FILE" in lines[-1]
    partial = "\n".join(nccl_log_lines([LOGS / "nccl-issue-1189-h20-ib.log"]))
    assert "not in it: the NCCL version" in partial  # a partial log says what it lacks
    assert nccl_log_lines([])[0].startswith("NCCL log: NCCL wrote none")
