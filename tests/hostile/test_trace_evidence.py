"""Issue 28, items 4, 5 and 11 (trace side): missing or empty evidence, a crashed run and inputs
that claim more than they hold never read CLEAN.

Each input under inputs/trace/ is a hand-made trace in the recorder's own line format
(docs/schema/trace-line.schema.json), the smallest that shows the defect: a 2-rank send/recv
exchange (tests/record_fixtures/exchange.py's shape) with one thing changed.
"""

from __future__ import annotations

import json
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest

from auditor import cli
from auditor.dynamic.trace import read_trace_dir
from auditor.errors import EXIT_FINDINGS, EXIT_OK

INPUTS = Path(__file__).resolve().parent / "inputs" / "trace"


@pytest.fixture
def scan(tmp_path: Path) -> str:
    path = tmp_path / "sites.json"
    path.write_text('{"sites": [], "targets": []}')
    return str(path)


def report(capsys, scan: str, *args: str) -> tuple[int, dict, str]:
    code = cli.main(["report", "--scan", scan, "--format", "json", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else {}, captured.err


def test_a_whole_run_reads_clean(capsys, scan):
    code, doc, _ = report(capsys, scan, "--trace", str(INPUTS / "clean"))
    assert code == EXIT_OK and doc["verdict"]["status"] == "clean"


# --- item 4: evidence missing for a rank of the world ------------------------------------------

@pytest.mark.parametrize("name, ranks", [
    ("only_rank0", "1-3"),            # another node's directory not collected
    ("only_rank0_no_world", "1-3"),   # no world size recorded: the group names ranks 0-3
    ("meta_only", "1"),               # rank 1's file holds only its meta line
    ("world5_four", "4"),             # world_size 5, four rank files
])
def test_missing_evidence_is_inconclusive_naming_the_ranks(capsys, scan, name, ranks):
    code, doc, err = report(capsys, scan, "--trace", str(INPUTS / name))
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "inconclusive", err
    assert f"rank(s) {ranks}" in doc["verdict"]["headline"]


def test_flight_recorder_dumps_without_entries_are_inconclusive(capsys, scan):
    code, doc, err = report(capsys, scan, "--flight-recorder", str(INPUTS / "fr" / "no_entries"))
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "inconclusive", err
    assert "rank(s) 0-1" in doc["verdict"]["headline"]


# --- item 5: a crashed run ---------------------------------------------------------------------

@pytest.mark.parametrize("name, kind", [
    ("raised", "run-op-raised"),          # recv ended in "Connection closed by peer"
    ("unclosed", "rank-file-not-closed"),  # the zeros a killed recorder leaves
    ("cut_last_line", "rank-file-not-closed"),  # its last line cut by a kill
])
def test_a_crashed_run_is_a_finding(capsys, scan, name, kind):
    code, doc, err = report(capsys, scan, "--trace", str(INPUTS / name))
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "findings", err
    found = [f for f in doc["findings"] if f["kind"] == kind]
    assert found and found[0]["severity"] == "error" and "rank 1" in found[0]["message"]


def test_the_raised_error_is_named(capsys, scan):
    _, doc, _ = report(capsys, scan, "--trace", str(INPUTS / "raised"))
    (found,) = [f for f in doc["findings"] if f["kind"] == "run-op-raised"]
    assert "Connection closed by peer" in found["message"]


# --- item 11: what an input claims is bounded by what it holds ---------------------------------

def test_a_claimed_world_of_ten_million_allocates_nothing_per_rank():
    tracemalloc.start()
    start = time.perf_counter()
    trace = read_trace_dir(INPUTS / "world_huge")
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert trace.missing_count == 10**7 - 2 and len(trace.missing) <= 1024
    assert peak < 20 << 20 and seconds < 5


def test_a_claimed_world_of_ten_million_is_not_clean(capsys, scan):
    code, doc, _ = report(capsys, scan, "--trace", str(INPUTS / "world_huge"))
    assert code == EXIT_FINDINGS and "rank(s) 2-9999999" in doc["verdict"]["headline"]


def test_a_dump_named_rank_9999999999_is_no_memory_error(capsys, scan):
    code, doc, err = report(capsys, scan, "--flight-recorder", str(INPUTS / "fr" / "huge_rank"))
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "inconclusive", err
    assert "rank(s) 0-9999999999" in doc["verdict"]["headline"]


def test_a_fifo_hang_file_does_not_block(tmp_path, capsys, scan):
    trace = tmp_path / "trace"
    shutil.copytree(INPUTS / "clean", trace)
    import os
    os.mkfifo(trace / "hang-rank-0.json")  # nothing ever writes it: opening it blocks
    start = time.perf_counter()
    code, doc, _ = report(capsys, scan, "--trace", str(trace))
    assert time.perf_counter() - start < 20 and code == EXIT_OK
    assert any("hang-rank-0.json: not a regular file" in s for s in doc["run"]["trace"]["skipped"])

