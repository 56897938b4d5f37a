"""The drawing of a trace's head ops (`report --format perfetto`) shows the states of the report's
own replay: for every op the joined timeline shows, the same state, communicator and wait-for
edge, on the recorded toy pipeline (a real 4-rank gloo run) and its recorded hang, under the
recorded conditions and under --transport/--init."""

from __future__ import annotations

import pytest
from tests.analysis.test_join import FIXTURES, toy_doc  # noqa: F401 (toy_doc: the toy pipeline's scan, a fixture)

from auditor.analysis.headops import head_ops
from auditor.analysis.join import join
from auditor.dynamic.trace import read_trace_dir


@pytest.mark.parametrize("recorded", ["pipeline", "hang"])
@pytest.mark.parametrize("asked", [{}, {"transport": "net"}, {"transport": "net", "init": "eager"}],
                         ids=["as-recorded", "net", "net-eager"])
def test_the_drawing_shows_the_reports_replay(toy_doc, recorded, asked):
    trace = read_trace_dir(FIXTURES / recorded)
    joined = join(toy_doc, trace, **asked)
    drawn = head_ops(trace, joined).model
    shown = [(lane["rank"], e) for lane in joined["run"]["timeline"]["ranks"]
             for e in lane["events"] if "index" in e and e["model"] != "creating"]
    assert shown
    for rank, event in shown:
        state = drawn[(rank, event["index"])]
        assert (state["model"], state["communicator"], state["blocked_on"], state["bytes"]) == (
            event["model"], event["communicator"], event["blocked_on"], event["bytes"])
    if recorded == "hang":
        assert any(s["model"] == "blocked" for s in drawn.values())
