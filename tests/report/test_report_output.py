"""Where `report` puts its HTML: on a terminal, into ./report.html (the path printed), never a
thousand lines of markup on the screen; piped or with -o, exactly where it was asked."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))


def cli(args: list[str], cwd: Path, stdout) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=300, env=_env())


def on_terminal(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, str]:
    """Run with stdout on a pseudo-terminal, read as it writes: (the process, what reached the
    terminal)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "auditor", *args], cwd=cwd, stdout=slave,
                            stderr=subprocess.PIPE, text=True, env=_env())
    os.close(slave)
    shown = b""
    while True:
        if select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: the child closed its end and it is drained
                chunk = b""
            shown += chunk
            if chunk:
                continue
        if proc.poll() is not None:
            break
    os.close(master)
    stderr = proc.stderr.read()
    proc.stderr.close()
    return subprocess.CompletedProcess(args, proc.returncode, None, stderr), \
        shown.decode(errors="replace")


@pytest.fixture()
def inventory(tmp_path) -> Path:
    """A sites document of a one-file package (the report reads inventories too)."""
    package = tmp_path / "mytrain"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import torch.distributed as dist\n\n\ndef step(x, peer):\n    dist.send(x, peer)\n")
    out = tmp_path / "sites.json"
    proc = cli(["sites", str(package), "--format", "json", "-o", str(out)], tmp_path, None)
    assert proc.returncode == 0, proc.stderr
    return out


def test_html_on_a_terminal_goes_to_report_html(inventory, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    proc, shown = on_terminal(["report", "--scan", str(inventory)], work)
    assert proc.returncode == 0, proc.stderr
    written = work / "report.html"
    assert written.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert f"p2paudit report: wrote {written}" in proc.stderr
    assert "<html" not in shown and len(shown) < 200


def test_piped_and_named_outputs_are_unchanged(inventory, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    piped = cli(["report", "--scan", str(inventory)], work, subprocess.PIPE)
    assert piped.stdout.startswith("<!DOCTYPE html>") and "wrote" not in piped.stderr
    proc, shown = on_terminal(["report", "--scan", str(inventory), "-o", "-"], work)
    assert "<!DOCTYPE html>" in shown
    proc, shown = on_terminal(["report", "--scan", str(inventory), "--format", "json"], work)
    assert '"sites"' in shown
    assert not (work / "report.html").exists()
    named = work / "named.html"
    proc, shown = on_terminal(["report", "--scan", str(inventory), "-o", str(named)], work)
    assert named.exists() and "wrote" not in proc.stderr and not (work / "report.html").exists()


def test_the_page_of_a_recorded_run_alone_is_titled_by_its_trace(tmp_path):
    """A report of a trace with no scan has no launch path and no targets: the title names the
    trace directory, not an empty 'p2paudit: '."""
    trace = ROOT / "tests" / "record_fixtures" / "megatron_pp4"
    out = tmp_path / "run.html"
    proc = cli(["report", "--trace", str(trace), "--format", "html", "-o", str(out)], tmp_path, None)
    assert proc.returncode == 0, proc.stderr
    assert f"<title>p2paudit: {trace}</title>" in out.read_text()
