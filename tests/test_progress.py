"""Progress a log can show: long steps print what and how far every few seconds on stderr, also
when stderr is a pipe (a CI log), and nothing when they end sooner."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.progress import Progress

ROOT = Path(__file__).resolve().parent.parent


def test_a_long_step_reports_until_done_a_short_one_stays_silent(monkeypatch):
    monkeypatch.setenv("P2PAUDIT_PROGRESS_SECONDS", "0.05")
    out = io.StringIO()
    with Progress("parsing x", total=4, unit="files", stream=out) as bar:
        for _ in range(4):
            time.sleep(0.08)
            bar.advance()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3 and lines[-1].startswith("p2paudit: parsing x: done, ")
    assert any(" of 4 files (" in line for line in lines[:-1])
    monkeypatch.setenv("P2PAUDIT_PROGRESS_SECONDS", "5")
    quiet = io.StringIO()
    with Progress("parsing y", stream=quiet):
        pass
    assert quiet.getvalue() == ""


def run_cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "P2PAUDIT_CACHE": str(tmp_path / "cache"),
           "P2PAUDIT_PROGRESS_SECONDS": "0.02"}
    return subprocess.run([sys.executable, "-m", "auditor", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)


def test_a_cold_parse_into_a_pipe_prints_lines(tmp_path):
    """This test suite's own files: enough to parse (30 of them hold P2P calls) that a cold
    parse outlasts the 0.02 s interval; the fixtures' few files parse quicker since the stdlib
    `ast` replaced libcst."""
    proc = run_cli(["sites", str(ROOT / "tests")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("p2paudit: parsing ")]
    assert lines and lines[-1].startswith("p2paudit: parsing tests: done, ")


@pytest.mark.wheels
def test_a_download_into_a_pipe_prints_lines(tmp_path):
    proc = run_cli(["sites", "six==1.16.0"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "p2paudit: downloading six==1.16.0: done, " in proc.stderr
