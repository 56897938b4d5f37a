"""auditor.dynamic.runs: the run a command joins with a scan, read from a `record` trace
directory or from PyTorch Flight Recorder dumps (the shipped ones: tests/record_fixtures/hang,
recorded by tests/record_fixtures/exchange.py; tests/fr_dumps/gloo-clean, made by
tests/fr_dumps/make_dumps.py), never both."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.dynamic.runs import read_run
from auditor.errors import InputError

TESTS = Path(__file__).parents[1]
TRACE = TESTS / "record_fixtures" / "hang"
DUMPS = TESTS / "fr_dumps" / "gloo-clean" / "json"


def test_no_run_given_is_none():
    assert read_run(None, None, []) is None


def test_a_trace_directory_is_read_as_recorded():
    trace = read_run(str(TRACE), None, [])
    assert sorted(trace.ranks) == [0, 1, 2, 3]
    assert all(rt.meta.get("source") != "flight-recorder" for rt in trace.ranks.values())


def test_flight_recorder_dumps_are_read_as_a_run():
    trace = read_run(None, str(DUMPS), [])
    assert sorted(trace.ranks) == [0, 1]
    assert all(rt.meta.get("source") == "flight-recorder" for rt in trace.ranks.values())
    assert [e["api"] for e in trace.ranks[0].starts()] == ["all_reduce"] * 3


def test_both_is_bad_input_naming_the_choice():
    with pytest.raises(InputError, match="give --trace DIR or --flight-recorder DIR, not both") as exc:
        read_run(str(TRACE), str(DUMPS), [])
    assert exc.value.subject == "--flight-recorder"
