"""simulate's prediction and the report of it judge one replay: the join of the scan with the run
as issued replays it under the very conditions the prediction shows (coalescing included), on
the recorded toy pipeline (a real 4-rank gloo run with batch_isend_irecv, tests/record_fixtures)."""

from __future__ import annotations

import pytest
from tests.analysis.test_join import FIXTURES, toy_doc  # noqa: F401 (toy_doc: the toy pipeline's scan, a fixture)

from auditor.dynamic.trace import read_trace_dir
from auditor.simulate import predict
from auditor.simulate.plan import SimulationPlan


def open_conditions(coalesce: list[bool], transport: list[str]) -> SimulationPlan:
    """A plan whose only content is the conditions its script leaves open (all `replays` reads)."""
    return SimulationPlan({}, [], FIXTURES, candidates={"coalesce": coalesce, "init": ["lazy"],
                                              "transport": transport})


@pytest.mark.parametrize("coalesce", [True, False])
@pytest.mark.parametrize("transport", ["net", "nvlink"])
def test_the_joined_report_replays_what_the_prediction_shows(toy_doc, coalesce, transport):
    """Found in review: the join took only --transport and --init from the shown replay and kept
    the gloo recording's own coalescing (none), so a prediction that batches coalesce was
    reported, cycle, deadlock verdicts and findings, as if they ran op by op."""
    trace = read_trace_dir(FIXTURES / "pipeline")
    results = predict.replays(toy_doc, trace, open_conditions([coalesce], [transport]))
    shown = predict.pick(results)
    assert shown.conditions.coalesce is coalesce
    wf = predict.joined(toy_doc, trace, shown)["run"]["waitfor"]
    assert wf["conditions"] == shown.conditions.to_json()
    assert wf["deadlock"] == shown.deadlock.to_json()
    assert (wf["hang"], wf["cycle"], wf["blocked"]) == (
        shown.analysis.hang, shown.analysis.cycle, shown.analysis.blocked)
    assert wf["mismatched_pairs"] == shown.analysis.mismatched_pairs


def test_each_open_condition_is_replayed_and_the_shown_one_is_the_risk(toy_doc):
    trace = read_trace_dir(FIXTURES / "pipeline")
    results = predict.replays(toy_doc, trace, open_conditions([True, False], ["net"]))
    assert [r.conditions.coalesce for r in results] == [True, False]
    shown = predict.pick(results)
    risky = [r for r in results if r.deadlock.will] or [r for r in results if r.deadlock.will is None]
    assert shown is (risky[0] if risky else results[0])
