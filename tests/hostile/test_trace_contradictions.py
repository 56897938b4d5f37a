"""Issue 28, item 6: a trace that contradicts itself is refused (exit 2, one line naming the
file), by `report` and `export` alike: they judge a trace through the one reader
(auditor.dynamic.trace.read_trace_dir). A restart (torchrun --max-restarts: every rank of a new
attempt writes `rank-N.PID.jsonl` beside the old attempt's `rank-N.jsonl`, auditor/dynamic/
trace.rank_file) is read, its latest attempt judged; two runs written at once are not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.errors import EXIT_INPUT, EXIT_OK

INPUTS = Path(__file__).resolve().parent / "inputs" / "trace"

CONTRADICTIONS = [
    ("reused_seq", "rank-1.jsonl:4", "seq 2"),        # a reused seq hid a pending op
    ("t_soon", "rank-1.jsonl:3", "'soon'"),
    ("t_nan", "rank-1.jsonl:4", "NaN"),
    ("seq_huge", "rank-1.jsonl:3", "seq"),             # 2**70
    ("group_dup_ranks", "rank-0.jsonl:2", "twice"),    # a group [0, 0, 1, 2, 3]
    ("ended_twice", "rank-1.jsonl:5", "ended twice"),
    ("end_never_started", "rank-1.jsonl:5", "never started"),
    ("two_runs", "rank-0.200.jsonl", "two runs"),      # rank-0.jsonl and rank-0.PID.jsonl at once
    ("second_run_partial", "rank-0.400.jsonl", "two runs"),  # rank 0 of run B, rank 1 of run A
]


@pytest.fixture
def scan(tmp_path: Path) -> str:
    path = tmp_path / "sites.json"
    path.write_text('{"sites": [], "targets": []}')
    return str(path)


@pytest.mark.parametrize("name, where, what", CONTRADICTIONS)
def test_report_refuses_a_trace_that_contradicts_itself(capsys, scan, name, where, what):
    code = cli.main(["report", "--scan", scan, "--format", "json", "--trace", str(INPUTS / name)])
    err = capsys.readouterr().err.strip()
    assert code == EXIT_INPUT, err
    assert len(err.splitlines()) == 1 and where in err and what in err, err
    assert "internal error" not in err


@pytest.mark.parametrize("name, where, what", CONTRADICTIONS)
def test_export_refuses_what_report_refuses(tmp_path, capsys, name, where, what):
    pytest.importorskip("pyarrow")
    code = cli.main(["export", str(INPUTS / name), "-o", str(tmp_path / "out"), "--jobs", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_INPUT and where in err[-1] and what in err[-1], err
    assert not (tmp_path / "out" / "ops.parquet").exists()


def test_a_restart_is_read_as_its_latest_attempt(capsys, scan):
    code = cli.main(["report", "--scan", scan, "--format", "json",
                     "--trace", str(INPUTS / "restart")])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == EXIT_OK, captured.err
    assert any("earlier process(es) rank-0.jsonl kept apart" in s
               for s in doc["run"]["trace"]["skipped"])


@pytest.mark.parametrize("name, number", [("seq_huge", 3), ("group_dup_ranks", 2)])
def test_the_trace_line_schema_refuses_what_the_reader_refuses(name, number):
    """The contract (docs/schema/trace-line.schema.json) says what the reader checks of one line:
    a seq the recorder's counter can hold, a group naming each rank once."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "schema" /
                         "trace-line.schema.json").read_text())
    file = INPUTS / name / ("rank-1.jsonl" if name == "seq_huge" else "rank-0.jsonl")
    line = json.loads(file.read_text().splitlines()[number - 1])
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(line))
