"""auditor.analysis.runevidence: what a trace says of its own completeness, on the committed
recordings of tests/record_fixtures (regenerate.py says how each was made): a rank without a
file is undecided, never CLEAN; an op that raised and a file never closed are findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.analysis.runevidence import evidence_complete, stopped_findings, undecided_evidence
from auditor.dynamic.trace import read_trace_dir

FIXTURES = Path(__file__).parents[1] / "record_fixtures"


def trace(name: str):
    return read_trace_dir(FIXTURES / name)


@pytest.mark.parametrize("name", ["pipeline", "hang"])
def test_every_rank_left_a_closed_file(name):
    """A clean run, and a hang whose ranks wrote their hang files and closed on SIGTERM."""
    t = trace(name)
    assert evidence_complete(t) and undecided_evidence(t) == [] and stopped_findings(t) == []


def test_a_lost_rank_is_undecided_and_a_cut_file_not_closed():
    """damaged/: rank 3's file is gone (a lost node), rank 1's last line cut (a SIGKILL mid-write)."""
    t = trace("damaged")
    assert not evidence_complete(t)
    [gap] = undecided_evidence(t)
    assert gap["what"].startswith("rank(s) 3 of the world of 4 left no evidence (1 with no trace file)")
    assert "rank-N.jsonl of each rank" in gap["decide"]
    [stopped] = stopped_findings(t)
    assert (stopped.kind, stopped.severity) == ("rank-file-not-closed", "error")
    assert stopped.detail == {"unclosed": {"1": "its last line is cut short (by a kill?)"}}


def test_a_killed_rank_and_the_ops_its_peers_raised_are_findings():
    """killed/: rank 2 SIGKILLed itself after its first recv; its peers' ops raised."""
    t = trace("killed")
    assert not evidence_complete(t) and undecided_evidence(t) == []
    raised, unclosed = stopped_findings(t)
    assert raised.kind == "run-op-raised" and raised.severity == "error"
    assert raised.message.startswith("2 op(s) ended in an exception on rank(s) 1, 3; first: rank 1's irecv (seq 17) "
                                     "at toy_pipeline.py:48: RuntimeError:")
    assert raised.where == "toy_pipeline.py:48"
    assert sorted(raised.detail["raised"]) == ["1", "3"]
    assert unclosed.kind == "rank-file-not-closed" and "rank(s) 2 stopped without closing" in unclosed.message
