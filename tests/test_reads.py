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


def test_a_listed_folder_holds_what_its_reader_picks_up(tmp_path: Path) -> None:
    """A folder read by listing it (a trace) is an input where its reader would pick a new file
    up, by any spelling: at its top level under the names it reads, or at any depth for a
    folder read with every folder below it (Flight Recorder dumps)."""
    trace, dumps = tmp_path / "trace", tmp_path / "fr"
    (trace / "sub").mkdir(parents=True)
    (dumps / "sub").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(trace)
    reads.watch()
    assert reads.folder_holding(trace / "rank-9.jsonl") is None  # not read yet
    reads.note_folder(trace, picks=lambda name: name.startswith("rank-"))
    reads.note_folder(dumps, deep=True)
    for path in (trace / "rank-9.jsonl", tmp_path / "alias" / "rank-1.jsonl",
                 trace / ".." / "trace" / "rank-2.jsonl", trace):
        assert reads.folder_holding(path) == (str(trace), False)
    for path in (trace / "report.json", trace / "sub" / "rank-9.jsonl", tmp_path / "report.json"):
        assert reads.folder_holding(path) is None
    for path in (dumps / "report.json", dumps / "sub" / "new" / "x.json"):
        assert reads.folder_holding(path) == (str(dumps), True)
    reads.watch()  # the next command
    assert reads.folder_holding(trace / "rank-9.jsonl") is None
