"""`-o` never writes over a file the recorded run names on its command line.

Before: `p2paudit report --trace T -o ring.py`, run where `p2paudit record -- torchrun ring.py`
had been, replaced ring.py (the training script) with the HTML report, exit 0: report never
opens the script, so the check of the command's inputs passed. Each rank's meta line holds its
argv and now its working directory (`cwd`); the files they name are inputs of the command
(auditor/dynamic/runinputs.py), refused as a file it read is, the file left intact.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import cli
from auditor.dynamic import runinputs
from auditor.errors import EXIT_INPUT
from tests.hostile.test_recorder_cut import rank_lines

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCRIPT = "import torch.distributed as dist\n"


def job(tmp_path: Path) -> Path:
    """A job folder with its script and the config file its command line names."""
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "ring.py").write_text(SCRIPT)
    (folder / "cfg.yaml").write_text("pp: 2\n")
    return folder


def trace(root: Path, argv: list[str], cwd: str | None) -> Path:
    """A two-rank trace of pair_batches.py's order, whose meta lines say `argv` and `cwd`."""
    root.mkdir()
    for rank in (0, 1):
        lines = rank_lines(rank, 2)
        lines[0] = {**lines[0], "argv": argv, **({"cwd": cwd} if cwd is not None else {})}
        (root / f"rank-{rank}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def refused(capsys, code: int, target: Path) -> None:
    err = capsys.readouterr().err
    assert code == EXIT_INPUT, err
    assert f"{target.name}: is an input of this command" in err and runinputs.WHY in err, err


@pytest.mark.parametrize("name", ["ring.py", "cfg.yaml"])
def test_the_recorded_script_and_its_files_are_refused(tmp_path, monkeypatch, capsys, name):
    folder = job(tmp_path)
    recorded = trace(tmp_path / "T", ["ring.py", f"--config={'cfg.yaml'}"], str(folder))
    monkeypatch.chdir(tmp_path)  # elsewhere: the recorded cwd decides, not this one
    target = folder / name
    before = target.read_text()
    refused(capsys, cli.main(["report", "--trace", str(recorded), "--format", "json",
                              "-o", str(target)]), target)
    assert target.read_text() == before


def test_an_earlier_recorders_trace_reads_argv_from_here(tmp_path, monkeypatch, capsys):
    """No `cwd` in the meta line (recorders before it): relative words are read from the
    command's working directory."""
    folder = job(tmp_path)
    recorded = trace(tmp_path / "T", ["ring.py"], None)
    monkeypatch.chdir(folder)
    refused(capsys, cli.main(["report", "--trace", str(recorded), "-o", "ring.py"]),
            folder / "ring.py")
    assert (folder / "ring.py").read_text() == SCRIPT
    # another file of the job's folder is no input: written
    assert cli.main(["report", "--trace", str(recorded), "--format", "json",
                     "-o", "report.json"]) == 0
    assert json.loads((folder / "report.json").read_text())["run"]


def test_a_job_folder_copied_since_keeps_its_script(tmp_path, monkeypatch, capsys):
    """The recorded `cwd` no longer holds the job (the folder was copied or moved, review
    r42-reliab): the script named on the command line is also looked for here."""
    folder = job(tmp_path)
    recorded = trace(tmp_path / "T", ["ring.py"], str(tmp_path / "gone"))
    monkeypatch.chdir(folder)
    refused(capsys, cli.main(["report", "--trace", str(recorded), "-o", "ring.py"]),
            folder / "ring.py")
    assert (folder / "ring.py").read_text() == SCRIPT


def test_a_recorded_gloo_run_keeps_its_script(tmp_path):
    """The real thing: `p2paudit record -- torchrun ring.py` in the job's folder, then `report
    -o` naming the script by its absolute path from elsewhere."""
    folder = tmp_path / "job"
    folder.mkdir()
    script = Path(shutil.copy(HERE / "pair_batches.py", folder / "ring.py"))
    before = script.read_text()
    env = dict(os.environ, STEPS="2", PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", "T", "--", sys.executable, "-m",
         "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "ring.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    meta = json.loads((folder / "T" / "rank-0.jsonl").read_text().splitlines()[0])
    assert meta["argv"] == ["ring.py"] and meta["cwd"] == str(folder)
    done = subprocess.run(
        [sys.executable, "-m", "auditor", "report", "--trace", str(folder / "T"), "-o",
         str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == EXIT_INPUT, done.stderr
    assert "is an input of this command" in done.stderr and script.read_text() == before


def test_the_launch_script_record_ran_is_refused_too(tmp_path):
    """`p2paudit record -- bash run.sh`, run.sh starting torchrun: the ranks' argv names
    ring.py only, so `report -o run.sh` replaced the launch script (review r42-reliab). The meta
    line now keeps record's own command (`launch`), and its files are inputs as well."""
    folder = tmp_path / "job"
    folder.mkdir()
    shutil.copy(HERE / "pair_batches.py", folder / "ring.py")
    launch = folder / "run.sh"
    launch.write_text(f"{sys.executable} -m torch.distributed.run --standalone "
                      "--nproc_per_node 2 ring.py\n")
    before = launch.read_text()
    env = dict(os.environ, STEPS="2", PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", "T", "--", "bash", "run.sh"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    meta = json.loads((folder / "T" / "rank-0.jsonl").read_text().splitlines()[0])
    assert meta["launch"] == {"argv": ["bash", "run.sh"], "cwd": str(folder)}
    done = subprocess.run(
        [sys.executable, "-m", "auditor", "report", "--trace", str(folder / "T"), "-o",
         str(launch)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == EXIT_INPUT, done.stderr
    assert "is an input of this command" in done.stderr and launch.read_text() == before


def test_record_refuses_a_trace_folder_it_cannot_write_before_the_job(tmp_path):
    """A full filesystem (a 4 KiB tmpfs, filled): every rank would warn and run unrecorded;
    record now refuses before the command starts (the command here would write a marker)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(small)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        with open(small / "fill", "wb") as f:
            try:
                f.write(b"x" * 65536)
                f.flush()
            except OSError:
                pass
        marker = tmp_path / "started"
        done = subprocess.run(
            [sys.executable, "-m", "auditor", "record", "--out", str(small / "T"), "--", "touch",
             str(marker)], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == EXIT_INPUT, done.stderr
        assert "cannot write in the trace directory" in done.stderr
        assert "the command was not started" in done.stderr and not marker.exists()
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)
