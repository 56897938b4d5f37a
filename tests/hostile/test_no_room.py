"""A machine with no room to write (a full disk or quota, `ulimit -f`, a read-only filesystem)
is said in one line naming what to change, for every command: it is the machine's state, not a
p2paudit crash to report. Before turn 23, `ulimit -f 0; p2paudit scan ...` printed "internal
error: FileNotFoundError: [Errno 2] No usable temporary directory found in [...]" (tempfile tries
each folder and meets EFBIG in all)."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.errors import EXIT_INPUT, no_room

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS])
def test_each_no_room_errno_names_the_file_and_the_step(code):
    line = no_room(OSError(code, os.strerror(code), "/scratch/cache/x.whl"))
    assert line is not None and line.startswith("/scratch/cache/x.whl: cannot write: ")
    assert "TMPDIR" in line and "P2PAUDIT_CACHE" in line


def test_other_os_errors_stay_crashes():
    assert no_room(OSError(errno.ENOENT, "No such file or directory", "/x")) is None
    assert no_room(OSError(errno.EIO, "Input/output error")) is None


def test_scan_under_a_zero_file_size_limit_is_one_line(tmp_path):
    """A pinned script with an empty cache: scan must write (the release's archive, a temporary
    folder) before it can read anything."""
    script = tmp_path / "run.sh"
    script.write_text("# torch==2.10.0\n# ms-swift==4.3.0\nmegatron sft --model Qwen/Qwen3-8B "
                      "--pipeline_model_parallel_size 2\n")
    (tmp_path / "tmp").mkdir()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script)],
                          preexec_fn=limit, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT),
                               "P2PAUDIT_CACHE": str(tmp_path / "cache"),
                               "TMPDIR": str(tmp_path / "tmp")})
    assert done.returncode == EXIT_INPUT, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "internal error" not in errors[0], done.stderr
    assert "ulimit -f" in errors[0] or "cannot use as the p2paudit cache" in errors[0]
