"""Issue 28, items 1-2 and the output's Low items: `-o PATH` is written as the shell's `>` writes
it, never replaces a device, FIFO or symbolic link, never writes over a link's target file or a
file the command read,
and fails whole (one line, the old file intact, no temporary file left) when it cannot.

Every device used here is one made in tmp_path (a char node 1:3, a link to /dev/full): no test
writes to or renames over a node in /dev.
"""

from __future__ import annotations

import os
import resource
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from auditor import cli
from auditor.errors import EXIT_INPUT

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "tests" / "record_fixtures" / "toy_pipeline.py"
SCRIPT = ROOT / "tests" / "launch_scripts" / "torch_distributed_run.sh"
PIPELINE = ROOT / "tests" / "record_fixtures" / "pipeline"


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    """A one-file target: sites runs on it in well under a second."""
    (tmp_path / "tgt").mkdir()
    return Path(shutil.copy(TOY, tmp_path / "tgt" / TOY.name))


def sites(toy: Path, out: str | Path) -> int:
    return cli.main(["sites", str(toy), "-o", str(out)])


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("p2paudit ")]
    assert len(lines) == 1 and "error:" in lines[0] and "internal error" not in lines[0], err
    return lines[0]


def no_temporary_left(directory: Path) -> None:
    assert not [p.name for p in directory.iterdir() if p.name.startswith(".p2paudit-")]


# --- item 1: never replace what is not a regular file ------------------------------------------

def test_a_symlink_to_a_file_is_refused_before_the_work(tmp_path, toy, capsys):
    """The guide: p2paudit never writes over a symlink's target (`latest.txt -> reports/x` would
    silently overwrite a report the user did not name)."""
    report = tmp_path / "reports" / "sites.txt"
    report.parent.mkdir()
    report.write_text("old\n")
    link = tmp_path / "latest.txt"
    link.symlink_to(report)
    assert sites(toy, link) == EXIT_INPUT
    line = one_error_line(capsys)
    assert "is a symbolic link to" in line and str(report) in line
    assert link.is_symlink() and os.readlink(link) == str(report)
    assert report.read_text() == "old\n"
    no_temporary_left(report.parent)


def test_a_dangling_symlink_is_refused_and_nothing_made(tmp_path, toy, capsys):
    link = tmp_path / "latest.txt"
    link.symlink_to(tmp_path / "made.txt")
    assert sites(toy, link) == EXIT_INPUT
    assert "is a symbolic link to" in one_error_line(capsys)
    assert link.is_symlink() and not (tmp_path / "made.txt").exists()


def test_a_link_made_during_the_work_is_refused_when_written(tmp_path, toy, capsys):
    """`emit` checks again: the file named may have become a link while the scan ran."""
    from auditor.commands.output import emit
    from auditor.errors import InputError

    report = tmp_path / "kept.txt"
    report.write_text("old\n")
    link = tmp_path / "out.txt"
    link.symlink_to(report)
    with pytest.raises(InputError, match="symbolic link"):
        emit("new\n", str(link))
    assert report.read_text() == "old\n"


def test_a_fifo_is_written_through(tmp_path, toy):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert sites(toy, fifo) == 0
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert b"toy_pipeline.py" in got[0]


def test_a_char_device_stays_a_device(tmp_path, toy):
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
    except PermissionError:
        pytest.skip("mknod needs root")
    assert sites(toy, node) == 0
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_a_link_to_a_device_is_kept(tmp_path, toy):
    link = tmp_path / "discard"
    link.symlink_to("/dev/null")
    assert sites(toy, link) == 0
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_full_device_is_one_line_and_the_link_kept(tmp_path, toy, capsys):
    link = tmp_path / "full"
    link.symlink_to("/dev/full")
    assert sites(toy, link) == EXIT_INPUT
    assert "No space left on device" in one_error_line(capsys)
    assert link.is_symlink()


def test_a_descriptor_path_appends_to_what_the_shell_opened(tmp_path, toy):
    """`-o /proc/self/fd/1` under `>> log` (as `-o /dev/stdout` is): the log keeps its head."""
    log = tmp_path / "log"
    log.write_text("before\n")
    with log.open("a") as out:
        subprocess.run([sys.executable, "-m", "auditor", "sites", str(toy), "-o", "/proc/self/fd/1"],
                       stdout=out, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    text = log.read_text()
    assert text.startswith("before\n") and "toy_pipeline.py" in text


def test_a_regular_file_keeps_its_mode(tmp_path, toy):
    out = tmp_path / "sites.txt"
    out.write_text("old\n")
    out.chmod(0o640)
    assert sites(toy, out) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and "toy_pipeline.py" in out.read_text()


# --- item 2: never write over an input -----------------------------------------------------

def test_scan_refuses_its_launch_script_by_every_name(tmp_path, toy, capsys, monkeypatch):
    script = tmp_path / "run.sh"
    shutil.copy(SCRIPT, script)
    (tmp_path / "link.sh").symlink_to("run.sh")
    os.link(script, tmp_path / "hard.sh")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    for out in ("run.sh", "link.sh", "hard.sh", "sub/../run.sh", str(script)):
        code = cli.main(["scan", "--config", "run.sh", "--target", str(toy.parent),
                         "--torch", "2.10.0", "-o", out])
        assert code == EXIT_INPUT, out
        line = one_error_line(capsys)
        assert ("is a symbolic link to" if out == "link.sh" else "is an input of this command") in line
        assert script.read_bytes() == SCRIPT.read_bytes()
        assert (tmp_path / "link.sh").is_symlink()
    no_temporary_left(tmp_path)


def test_a_file_target_is_never_the_output(tmp_path, toy, capsys):
    before = toy.read_bytes()
    assert sites(toy, toy) == EXIT_INPUT
    assert "is an input" in one_error_line(capsys)
    assert toy.read_bytes() == before


def test_report_refuses_its_scan_document_and_a_trace_file(tmp_path, toy, capsys):
    doc = tmp_path / "sites.json"
    assert cli.main(["sites", str(toy), "--format", "json", "-o", str(doc)]) == 0
    trace = Path(shutil.copytree(PIPELINE, tmp_path / "trace"))
    for out in (doc, trace / "rank-2.jsonl"):
        before = out.read_bytes()
        code = cli.main(["report", "--scan", str(doc), "--trace", str(trace), "--format", "json",
                         "-o", str(out)])
        assert code == EXIT_INPUT
        assert "is an input" in one_error_line(capsys)
        assert out.read_bytes() == before


@pytest.mark.parametrize("name", ["rank-9.jsonl", "hang-rank-3.json", "../trace/rank-1.7.jsonl"])
def test_report_never_adds_a_file_to_its_trace_folder(tmp_path, capsys, name):
    """`report --trace T -o T/rank-9.jsonl` wrote a new file into the folder it reads: the next
    `report --trace T` failed on it (or, a JSON document named as a rank, read it as one). A file
    the trace reader would pick up (rank-N.jsonl, hang-rank-N.json at its top level) is refused,
    by any spelling, before writing."""
    trace = Path(shutil.copytree(PIPELINE, tmp_path / "trace"))
    before = sorted(p.name for p in trace.iterdir())
    code = cli.main(["report", "--trace", str(trace), "--format", "json", "-o", str(trace / name)])
    assert code == EXIT_INPUT
    line = one_error_line(capsys)
    assert name in line and f"is in {trace}, whose files named so this command reads" in line
    assert sorted(p.name for p in trace.iterdir()) == before
    assert cli.main(["report", "--trace", str(trace), "--format", "json",
                     "-o", str(tmp_path / "report.json")]) == 0  # beside it: written


@pytest.mark.parametrize("name", ["report.json", "out/rank-9.jsonl"])
def test_report_writes_in_its_trace_folder_where_the_reader_never_looks(tmp_path, name):
    """The trace reader lists only its folder's top level, and there only rank and hang files:
    a report.json beside them, or anything in a subfolder, is no input and is written (refusing
    it said, untruly, that the file would join the input)."""
    trace = Path(shutil.copytree(PIPELINE, tmp_path / "trace"))
    (trace / "out").mkdir()
    argv = ["report", "--trace", str(trace), "--format", "json"]
    assert cli.main([*argv, "-o", str(trace / name)]) == 0
    assert (trace / name).is_file()
    assert cli.main([*argv, "-o", str(tmp_path / "again.json")]) == 0  # the trace reads as before


def test_export_and_flight_recorder_never_write_into_their_input_folder(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    trace = Path(shutil.copytree(PIPELINE, tmp_path / "trace"))
    assert cli.main(["export", str(trace), "-o", str(trace / "tables")]) == 0  # never read
    assert cli.main(["export", str(trace), "-o", str(tmp_path / "tables")]) == 0
    capsys.readouterr()
    dumps = Path(shutil.copytree(ROOT / "tests" / "fr_dumps" / "gloo-clean" / "json", tmp_path / "fr"))
    (dumps / "sub").mkdir()
    before = sorted(p.name for p in dumps.rglob("*"))
    for out in (dumps / "report-1.json", dumps / "sub" / "report-1.json"):  # torch walks subfolders
        assert cli.main(["report", "--flight-recorder", str(dumps), "--format", "json",
                         "-o", str(out)]) == EXIT_INPUT
        assert f"is inside {dumps}, a folder this command reads with every folder below it" \
            in one_error_line(capsys)
    assert sorted(p.name for p in dumps.rglob("*")) == before


def test_diff_refuses_either_document(tmp_path, toy, capsys):
    doc = tmp_path / "sites.json"
    assert cli.main(["sites", str(toy), "--format", "json", "-o", str(doc)]) == 0
    before = doc.read_bytes()
    assert cli.main(["diff", str(doc), str(doc), "-o", str(doc)]) == EXIT_INPUT
    assert "is an input" in one_error_line(capsys) and doc.read_bytes() == before


# --- Low: a directory, a full filesystem, an interrupted write ------------------------------

def test_a_directory_is_one_line(tmp_path, toy, capsys):
    assert sites(toy, tmp_path) == EXIT_INPUT
    assert "is a directory" in one_error_line(capsys)


@pytest.fixture
def tiny_fs(tmp_path: Path):
    """A 64 KiB tmpfs (needs root, as a full filesystem on a real machine needs no test)."""
    where = tmp_path / "fs"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                      check=False, capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield where
    subprocess.run(["umount", str(where)], check=True)


def test_a_full_filesystem_leaves_the_old_file_and_no_temporary(tiny_fs, toy, capsys):
    out = tiny_fs / "sites.txt"
    out.write_text("the previous report\n")
    with (tiny_fs / "filler").open("wb", buffering=0) as f, pytest.raises(OSError):
        while True:  # fill it to the last block
            f.write(b"x" * 512)
    assert sites(toy, out) == EXIT_INPUT
    line = one_error_line(capsys)
    assert str(out) in line and "No space left on device" in line
    assert out.read_text() == "the previous report\n"
    no_temporary_left(tiny_fs)


def test_a_write_cut_short_leaves_no_temporary(tmp_path, toy):
    """A file-size limit (EFBIG, as a quota ends a write) in the middle of the output."""
    out = tmp_path / "sites.txt"
    out.write_text("old\n")
    assert sites(toy, tmp_path / "first.txt") == 0  # the analysis cache written before the limit

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))

    done = subprocess.run([sys.executable, "-m", "auditor", "sites", str(toy), "-o", str(out)],
                          check=False, preexec_fn=limit, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == EXIT_INPUT
    assert "internal error" not in done.stderr and str(out) in done.stderr
    assert out.read_text() == "old\n"
    no_temporary_left(tmp_path)
