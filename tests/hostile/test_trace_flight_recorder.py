"""Issue 28, items 11 and 12 and the low item on odd fields (Flight Recorder side): a dump that
refers to itself, shares one list a billion ways, carries fields of the wrong type or holds 32k
entries is answered at once, with one line naming the file where it is bad input.

The dumps follow torch's Flight Recorder format 2.10 (pytorch/pytorch,
torch/csrc/distributed/c10d/FlightRecorder.hpp; tests/fr_dumps/ holds real ones); each here is
the smallest that shows its defect.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from auditor import cli
from auditor.dynamic import flight_recorder
from auditor.errors import EXIT_INPUT

INPUTS = Path(__file__).resolve().parent / "inputs" / "trace" / "fr"


@pytest.fixture
def scan(tmp_path: Path) -> str:
    path = tmp_path / "sites.json"
    path.write_text('{"sites": [], "targets": []}')
    return str(path)


def refused(capsys, scan: str, dumps: Path) -> str:
    start = time.perf_counter()
    code = cli.main(["report", "--scan", scan, "--format", "json", "--flight-recorder", str(dumps)])
    err = capsys.readouterr().err.strip()
    assert time.perf_counter() - start < 10
    assert code == EXIT_INPUT and len(err.splitlines()) == 1, err
    assert "internal error" not in err
    return err


@pytest.mark.parametrize("name", ["self_ref", "shared_ref"])
def test_pickles_that_refer_to_themselves_or_share_lists_are_answered_at_once(capsys, scan, name):
    err = refused(capsys, scan, INPUTS / name)
    assert "rank0.pkl" in err


@pytest.mark.parametrize("name, field", [
    ("odd_sizes", "input_sizes"), ("odd_profiling_name", "profiling_name"),
    ("odd_frames", "frames"), ("odd_dtypes", "input_dtypes"), ("odd_time", "time_created_ns"),
])
def test_a_field_of_the_wrong_type_is_one_line_naming_it(capsys, scan, name, field):
    err = refused(capsys, scan, INPUTS / name)
    assert "rank0.json" in err and field in err


def window_shape(n: int) -> list[dict]:
    """Half the entries collectives on group 1, then coalescing-window closers each on a group of
    its own (a dump's ring buffer can start after a window's ops): each closer walked back over
    every entry before it, looking for its group's ops, and each group's op ids were listed from
    1 to the largest (quadratic: > 120 s at 32k entries)."""
    entries = []
    for i in range(n):
        if i < n // 2:
            entries.append({"record_id": i, "process_group": ["1", "g1"], "collective_seq_id": i,
                            "p2p_seq_id": 0, "op_id": i, "profiling_name": "nccl:all_reduce",
                            "state": "completed", "retired": True})
        else:
            entries.append({"record_id": i, "process_group": [f"c{i}", "coalesced"],
                            "collective_seq_id": 0, "p2p_seq_id": i, "op_id": i,
                            "profiling_name": "nccl:coalesced", "state": "completed",
                            "retired": True})
    return entries


def test_32k_entries_read_in_linear_time(tmp_path):
    n = 32_768
    dump = {"version": "2.10", "pg_config": {"1": {"name": "1", "desc": "g1", "ranks": "[0, 1]"}},
            "entries": window_shape(n)}
    for rank in range(2):
        (tmp_path / f"rank{rank}.json").write_text(json.dumps(dump))
    start = time.perf_counter()
    trace = flight_recorder.read_flight_recorder(tmp_path)
    assert time.perf_counter() - start < 20
    assert sum(rt.ops for rt in trace.ranks.values()) == n
