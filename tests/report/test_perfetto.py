"""`--format perfetto`: Chrome trace-event JSON for a recorded hang and for Flight Recorder dumps,
checked against the trace-event format and loaded by Perfetto's trace processor where its binary
can be had (the `perfetto` wheel downloads it at run time: offline, that test says so and skips)."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import main
from tests.dynamic.test_flight_recorder import long_dumps, p2p_entry, write_dumps

ROOT = Path(__file__).parents[1]
HANG = ROOT / "record_fixtures" / "hang"


def perfetto_json(tmp_path: Path, evidence: list[str], script: Path) -> dict[str, Any]:
    scan, out = tmp_path / "sites.json", tmp_path / "trace.json"
    assert main(["sites", str(script), "--format", "json", "-o", str(scan)]) == 0
    assert main(["report", "--scan", str(scan), *evidence, "--format", "perfetto", "-o", str(out)]) == 1
    return json.loads(out.read_text())


def check_trace_event_format(doc: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """The trace-event format's rules this output relies on; returns the slices per rank."""
    assert set(doc) >= {"traceEvents"} and isinstance(doc["traceEvents"], list)
    names: dict[int, str] = {}
    open_b: dict[tuple[int, int], list[dict[str, Any]]] = {}
    slices: dict[int, list[dict[str, Any]]] = {}
    flows: dict[int, list[str]] = {}
    lanes: dict[tuple[int, int], float] = {}
    for e in doc["traceEvents"]:
        assert {"ph", "pid"} <= set(e), e
        ph = e["ph"]
        if ph == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name") and "args" in e
            if e["name"] == "process_name":
                names[e["pid"]] = e["args"]["name"]
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0 and "tid" in e, e
        key = (e["pid"], e["tid"])
        if ph == "X":
            assert e["name"] and e["dur"] > 0
            assert e["ts"] >= lanes.get(key, 0) - 1e-6, "slices of one lane must not overlap"
            lanes[key] = e["ts"] + e["dur"]
            slices.setdefault(e["pid"], []).append(e)
        elif ph == "B":
            assert e["name"].startswith("PENDING ") and e["cat"] == "pending"
            open_b.setdefault(key, []).append(e)
            slices.setdefault(e["pid"], []).append(e)
        elif ph == "E":
            begin = open_b[key].pop()  # an E closes the last open B of its thread
            assert e["ts"] >= begin["ts"]
            lanes[key] = e["ts"]
        elif ph in ("s", "f"):
            assert "id" in e and e["cat"] == "wait-for"
            flows.setdefault(e["id"], []).append(ph)
        else:
            assert ph == "i" and e["s"] == "t" and e["name"].startswith("pending: ")
    assert not any(open_b.values()), "every B has its E"
    assert all(phases == ["s", "f"] for phases in flows.values())
    assert set(slices) <= set(names) and all(names[p] == f"rank {p}" for p in slices)
    return slices


def test_recorded_hang_as_perfetto(tmp_path):
    doc = perfetto_json(tmp_path, ["--trace", str(HANG)], ROOT / "record_fixtures" / "toy_pipeline.py")
    slices = check_trace_event_format(doc)
    assert sorted(slices) == [0, 1, 2, 3]  # one track per rank
    pending = {p: [s["name"] for s in ss if s["ph"] == "B"] for p, ss in slices.items()}
    assert pending == {0: [], 1: ["PENDING recv from 0"], 2: ["PENDING recv from 1"],
                       3: ["PENDING recv from 2"]}
    recv = next(s for s in slices[2] if s["ph"] == "B")
    assert recv["args"]["site"].startswith("toy_pipeline.py:") and recv["args"]["peer"] == 1
    assert recv["args"]["group"] == "pp" and recv["args"]["bytes"] > 0
    arrows = [e for e in doc["traceEvents"] if e["ph"] in "sf"]
    assert [(e["ph"], e["pid"]) for e in arrows] == [("s", 2), ("f", 1), ("s", 3), ("f", 2)]


def test_flight_recorder_deadlock_as_perfetto_draws_the_cycle(tmp_path):
    frame = {"name": "main", "line": 40, "filename": "/job/make_dumps.py"}
    dumps = tmp_path / "dumps"
    write_dumps(dumps, {r: [p2p_entry(0, "send", r, 1 - r, 1, frame, "started"),
                            p2p_entry(1, "recv", r, 1 - r, 2, frame, "scheduled")] for r in (0, 1)})
    doc = perfetto_json(tmp_path, ["--flight-recorder", str(dumps)], ROOT / "fr_dumps" / "make_dumps.py")
    slices = check_trace_event_format(doc)
    assert "a cycle" in doc["otherData"]["cycle"]
    for rank in (0, 1):
        names = [s["name"] for s in slices[rank]]
        assert names == [f"PENDING isend to {1 - rank}", f"PENDING irecv from {1 - rank}"]
        assert slices[rank][0]["args"]["flight_recorder"]["state"] == "started"
    starts = {(e["pid"], e["id"]) for e in doc["traceEvents"] if e["ph"] == "s"}
    ends = {(e["pid"], e["id"]) for e in doc["traceEvents"] if e["ph"] == "f"}
    # The loop: each rank's waiting op points at the other rank.
    assert {p for p, _ in starts} == {p for p, _ in ends} == {0, 1}


def test_perfetto_needs_a_run(tmp_path, capsys):
    scan = tmp_path / "sites.json"
    main(["sites", str(ROOT / "fr_dumps" / "make_dumps.py"), "--format", "json", "-o", str(scan)])
    capsys.readouterr()
    assert main(["report", "--scan", str(scan), "--format", "perfetto"]) == 2
    assert "give --trace DIR or --flight-recorder DIR" in capsys.readouterr().err


def test_perfetto_trace_processor_loads_it(tmp_path):
    """A real consumer: Perfetto's trace processor imports the JSON and finds every slice."""
    tp_module = pytest.importorskip("perfetto.trace_processor")
    doc = perfetto_json(tmp_path, ["--trace", str(HANG)], ROOT / "record_fixtures" / "toy_pipeline.py")
    config = tp_module.TraceProcessorConfig(bin_path=os.environ.get("TRACE_PROCESSOR_SHELL"))
    try:
        tp = tp_module.TraceProcessor(trace=str(tmp_path / "trace.json"), config=config)
    except (subprocess.CalledProcessError, OSError, tp_module.TraceProcessorException) as exc:
        pytest.skip("no trace_processor_shell here: the perfetto wheel downloads it from "
                    f"get.perfetto.dev at run time ({type(exc).__name__}); set TRACE_PROCESSOR_SHELL")
    try:
        rows = {r.rank: r.n for r in tp.query(
            "select p.name as rank, count(*) as n from slice s join thread_track t "
            "on s.track_id = t.id join thread using (utid) join process p using (upid) "
            "group by p.name")}
    finally:
        tp.close()
    expected = Counter(f"rank {e['pid']}" for e in doc["traceEvents"] if e["ph"] in ("X", "B"))
    assert rows == dict(expected)


def test_a_document_alone_draws_its_timeline(tmp_path):
    """A simulation (or a saved report) has the joined `run` section but no trace at hand: the
    document's timeline is drawn, with the same pending ops and arrows."""
    from auditor.report.perfetto import trace_events
    scan, joined = tmp_path / "sites.json", tmp_path / "joined.json"
    main(["sites", str(ROOT / "record_fixtures" / "toy_pipeline.py"), "--format", "json", "-o", str(scan)])
    main(["report", "--scan", str(scan), "--trace", str(HANG), "--format", "json", "-o", str(joined)])
    doc = trace_events(json.loads(joined.read_text()))
    slices = check_trace_event_format(doc)
    full = check_trace_event_format(perfetto_json(tmp_path, ["--trace", str(HANG)],
                                                  ROOT / "record_fixtures" / "toy_pipeline.py"))
    pending = {p: [s["name"] for s in ss if s["ph"] == "B"] for p, ss in slices.items()}
    assert pending == {p: [s["name"] for s in ss if s["ph"] == "B"] for p, ss in full.items()}
    assert [e["pid"] for e in doc["traceEvents"] if e["ph"] in "sf"] == [2, 1, 3, 2]


def test_a_cut_head_window_is_said_and_its_pending_op_still_drawn(tmp_path):
    """Dumps longer than the head window: the first 32 ops per rank are drawn, the trace says the
    rest are not, and rank 0's last SEND (pending, beyond the window) is still a PENDING slice."""
    from auditor.analysis.join import join
    from auditor.dynamic.flight_recorder import read_flight_recorder
    from auditor.analysis.headops import head_ops
    from auditor.report.perfetto import trace_events
    long_dumps(tmp_path / "dumps")
    scan = tmp_path / "sites.json"
    main(["sites", str(ROOT / "fr_dumps" / "make_dumps.py"), "--format", "json", "-o", str(scan)])
    trace = read_flight_recorder(tmp_path / "dumps", head_ops=64)
    joined = join(json.loads(scan.read_text()), trace)
    doc = trace_events(joined, head_ops(trace, joined))
    slices = check_trace_event_format(doc)
    assert [len([s for s in slices[r] if s["ph"] in "XB"]) for r in (0, 1)] == [33, 32]
    (pending,) = [s for s in slices[0] if s["ph"] == "B"]
    assert pending["name"] == "PENDING isend to 1" and pending["args"]["flight_recorder"]["record_id"] == 80
    cut = doc["otherData"]["cut"]
    assert [c.split(":")[0] for c in cut] == ["rank 0", "rank 1"]
    assert "first 32 of its 81 P2P ops" in cut[0] and "not drawn" in cut[0]
