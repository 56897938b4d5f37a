"""Issue 28, low items: JSON nested deeper than the decoder recurses (a rank line, a Flight
Recorder dump, the scan document report reads) and NaN in a hang file are bad input: one line
naming the file, exit 2 (or the hang file skipped with a note), never "internal error"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from auditor import cli
from auditor.errors import EXIT_INPUT, EXIT_OK

INPUTS = Path(__file__).resolve().parent / "inputs" / "trace"
DEEP = "[" * 5000 + "]" * 5000  # json's C decoder recurses once per level


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["report", "--format", "json", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


def one_line(code: int, err: str, name: str) -> None:
    assert code == EXIT_INPUT and len(err.splitlines()) == 1, err
    assert "internal error" not in err and name in err and "nested" in err, err


def test_a_rank_line_nested_too_deep(tmp_path, capsys):
    trace = tmp_path / "trace"
    shutil.copytree(INPUTS / "clean", trace)
    with (trace / "rank-1.jsonl").open("a") as f:
        f.write('{"seq":4,"t":0.4,"rank":1,"api":"new_group","phase":"start","kind":"setup",'
                f'"ranks":{DEEP}}}\n')
    code, _, err = run(capsys, "--trace", str(trace))
    one_line(code, err, "rank-1.jsonl:5")


def test_a_flight_recorder_dump_nested_too_deep(tmp_path, capsys):
    (tmp_path / "rank0.json").write_text(f'{{"version": "2.10", "entries": {DEEP}}}')
    code, _, err = run(capsys, "--flight-recorder", str(tmp_path))
    one_line(code, err, "rank0.json")


def test_a_scan_document_nested_too_deep(tmp_path, capsys):
    scan = tmp_path / "scan.json"
    scan.write_text(f'{{"sites": {DEEP}, "targets": []}}')
    code, _, err = run(capsys, "--scan", str(scan), "--trace", str(INPUTS / "clean"))
    one_line(code, err, "scan.json")


def test_nan_in_a_hang_file_is_skipped_with_a_note(tmp_path, capsys):
    trace = tmp_path / "trace"
    shutil.copytree(INPUTS / "clean", trace)
    (trace / "hang-rank-0.json").write_text('{"rank": 0, "reason": "SIGUSR1", "t": NaN}')
    code, out, err = run(capsys, "--trace", str(trace))
    assert code == EXIT_OK, err
    skipped = json.loads(out)["run"]["trace"]["skipped"]
    assert any(s.startswith("hang-rank-0.json: unreadable hang file") for s in skipped)
