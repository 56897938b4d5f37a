"""The files a command has read (auditor/reads.py), so that `-o` never writes over an input: seen
through Python's `open` audit event whoever opens them, and matched by device and inode (through
symbolic links, hard links and relative spellings); a file opened to be written is not an input."""

from __future__ import annotations

import os
from pathlib import Path

from auditor import reads


def test_a_file_read_is_an_input_under_any_name(tmp_path: Path, monkeypatch) -> None:
    script = tmp_path / "run.sh"
    script.write_text("torchrun train.py\n")
    (tmp_path / "link.sh").symlink_to(script)
    os.link(script, tmp_path / "hard.sh")
    reads.watch()
    assert reads.input_named(str(script)) is None  # not read yet
    script.read_text()
    monkeypatch.chdir(tmp_path)
    for name in (str(script), "run.sh", "./link.sh", "hard.sh"):
        assert reads.input_named(name) == str(script)


def test_writes_and_other_files_are_not_inputs(tmp_path: Path) -> None:
    reads.watch()
    out = tmp_path / "report.json"
    out.write_text("{}")
    with open(tmp_path / "log.txt", "a") as log:
        log.write("x")
    fd = os.open(tmp_path / "raw", os.O_WRONLY | os.O_CREAT)
    os.close(fd)
    assert reads.input_named(str(out)) is None
    assert reads.input_named(str(tmp_path / "log.txt")) is None
    assert reads.input_named(str(tmp_path / "raw")) is None
    assert reads.input_named(str(tmp_path / "absent.json")) is None


def test_each_command_starts_an_empty_set_and_notes_reads_elsewhere(tmp_path: Path) -> None:
    trace = tmp_path / "rank-0.jsonl"
    trace.write_text("")
    reads.watch()
    trace.read_text()
    reads.watch()  # the next command
    assert reads.input_named(str(trace)) is None
    reads.note(trace)  # read by a rank, in another process
    assert reads.input_named(str(trace)) == str(trace)


def test_a_listed_folder_holds_every_path_below_it(tmp_path: Path) -> None:
    """A folder read by listing it (a trace) is an input as a whole: a file written inside it,
    at any depth and by any spelling, would join it."""
    trace = tmp_path / "trace"
    (trace / "sub").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(trace)
    reads.watch()
    assert reads.folder_holding(trace / "rank-9.jsonl") is None  # not read yet
    reads.note_folder(trace)
    for path in (trace / "rank-9.jsonl", trace / "sub" / "new" / "x.json", tmp_path / "alias" / "r.json",
                 trace / ".." / "trace" / "r.json", trace):
        assert reads.folder_holding(path) == str(trace)
    assert reads.folder_holding(tmp_path / "report.json") is None
    reads.watch()  # the next command
    assert reads.folder_holding(trace / "rank-9.jsonl") is None
