"""A run as a Chrome trace-event file that Perfetto (ui.perfetto.dev) and chrome://tracing open.

One process track per rank; every op a slice from the moment the rank issued it to the moment it
completed (site, peer, group, bytes, communicator and the wait-for model's state in its args). An
op that never completed is a slice named `PENDING ...` (category "pending") that stays open to the
end of the trace, with an instant event where it began; one its process left open when it crashed
or exited is `IN FLIGHT AT EXIT ...` (category "in_flight"), ending with that rank's last event:
it was abandoned, not waited on. The wait-for analysis's edges are flow
arrows from the waiting op to what it waits for, so the cycle of a deadlock reads as a loop of
arrows. Ops of one rank that overlap in time (an isend still running when the next op starts) go
to further lanes of that rank's track, since a trace-event track nests slices and these do not nest.

Works on a joined document (`report --trace`, `--flight-recorder`, or any document with the
join's `run` section, as a simulation writes), with the ops of the trace it was joined from when
there is one (`analysis.headops`: its head window with times and states, and every op still
pending) or from the document's timeline alone (its first ops per rank). Where a rank's head window is cut, the trace says so in
`otherData.cut`, and the wait-for states are those of the join's closed prefixes.
"""

from __future__ import annotations

from typing import Any

from auditor.analysis.headops import HeadOps
from auditor.dynamic.rankfile import IN_FLIGHT
from auditor.errors import InputError

US = 1e6  # trace-event timestamps are microseconds
TAIL_US = 1000.0  # pending slices stay open this far past the last event


def trace_events(doc: dict[str, Any], head: HeadOps | None = None) -> dict[str, Any]:
    """The trace-event JSON object for a joined document (and the ops of the trace it was joined
    from, with their wait-for states, as `analysis.headops` reads them)."""
    run = doc.get("run")
    if not isinstance(run, dict) or "waitfor" not in run:
        raise InputError("--format perfetto", "draws a run: give --trace DIR or --flight-recorder DIR")
    if head is None:
        return _Builder(_ops_from_timeline(run), _model_from_timeline(run), run, []).build()
    return _Builder(head.ops, head.model, run, head.cut).build()


def _ops_from_timeline(run: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for lane in run.get("timeline", {}).get("ranks", []):
        out[lane["rank"]] = [{**ev, "t_end": None, "ended": ev.get("recorded") not in ("pending", IN_FLIGHT),
                              "in_flight": ev.get("recorded") == IN_FLIGHT,
                              "error": None, "index": ev.get("index")} for ev in lane["events"]]
    return out


def _model_from_timeline(run: dict[str, Any]) -> dict[tuple[int, int], dict[str, Any]]:
    return {(lane["rank"], ev["index"]): {k: ev.get(k) for k in
                                         ("model", "communicator", "blocked_on", "bytes")}
            for lane in run.get("timeline", {}).get("ranks", []) for ev in lane["events"]
            if ev.get("index") is not None}


def _name(op: dict[str, Any]) -> str:
    api = str(op.get("api"))
    if op.get("kind") == "p2p" and op.get("peer") is not None:
        arrow = "to" if "send" in api else "from"
        return f"{api} {arrow} {op['peer']}"
    return api


class _Builder:
    def __init__(self, ops: dict[int, list[dict[str, Any]]],
                 model: dict[tuple[int, int], dict[str, Any]], run: dict[str, Any],
                 cut: list[str]) -> None:
        self.ops, self.model, self.run, self.cut = ops, model, run, cut
        self.events: list[dict[str, Any]] = []
        self.slices: dict[tuple[int, int], tuple[int, float]] = {}  # (rank, index) -> (lane, ts)
        self.last: dict[int, tuple[int, float]] = {}  # rank -> its last slice

    def build(self) -> dict[str, Any]:
        times = [op["t"] for ops in self.ops.values() for op in ops if op.get("t") is not None]
        times += [op["t_end"] for ops in self.ops.values() for op in ops if op.get("t_end") is not None]
        self.t0 = min(times) if times else 0.0
        self.end_us = (max(times) - self.t0) * US + TAIL_US if times else TAIL_US
        for rank in sorted(self.ops):
            self._rank(rank)
        self._flows()
        wf = self.run["waitfor"]
        return {"traceEvents": self.events, "displayTimeUnit": "ms", "otherData": {
            "tool": "p2paudit", "hang": wf.get("hang"), "cycle": wf.get("cycle") or "",
            "conditions": wf.get("conditions"), "cut": self.cut,
            "notes": "PENDING slices never completed before the trace or dump ended; IN FLIGHT AT EXIT "
                     "ones were open when their process crashed or exited (not waiting); arrows are "
                     "the wait-for model's edges (waiting op -> what it waits for)"}}

    def _ts(self, t: float | None, previous: float) -> float:
        return previous + 1.0 if t is None else round((t - self.t0) * US, 3)

    def _rank(self, rank: int) -> None:
        self.events += [
            {"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"rank {rank}"}},
            {"ph": "M", "name": "process_sort_index", "pid": rank, "args": {"sort_index": rank}}]
        lanes: list[float] = []  # per lane, when its last slice ends
        ops = self.ops[rank]
        previous = 0.0
        for i, op in enumerate(ops):
            ts = self._ts(op.get("t"), previous)
            previous = ts
            state = self.model.get((rank, op["index"]), {}) if op.get("index") is not None else {}
            pending = not op["ended"]
            if pending and op.get("in_flight"):  # the process ended: the op ends with it
                end = max(ts + 1.0, max((self._ts(o.get("t_end") or o.get("t"), ts) for o in ops), default=ts))
            elif pending:
                end = self.end_us
            elif op.get("t_end") is not None:
                end = max(ts + 1.0, self._ts(op["t_end"], ts))
            else:  # completed, completion time not recorded (gloo Flight Recorder entries)
                nxt = next((o.get("t") for o in ops[i + 1:] if o.get("t") is not None), None)
                end = max(ts + 1.0, self._ts(nxt, ts)) if nxt is not None else ts + 1.0
            lane = next((k for k, free in enumerate(lanes) if free <= ts), len(lanes))
            if lane == len(lanes):
                lanes.append(end)
                self.events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": lane,
                                    "args": {"name": "ops" if lane == 0 else f"ops (overlapping {lane})"}})
            lanes[lane] = end
            args = {k: v for k, v in {
                "site": op.get("where"), "peer": op.get("peer"), "group": op.get("group"),
                "bytes": state.get("bytes") or op.get("bytes"), "batch": op.get("batch"),
                "batched": op.get("batched"), "communicator": state.get("communicator"),
                "model": state.get("model"), "error": op.get("error"),
                "recorded": ("in flight when the process ended (it crashed or exited): not waiting"
                             if op.get("in_flight") else "pending: never completed before the trace ended")
                            if pending else
                            ("completed, time not recorded" if op.get("t_end") is None else "completed"),
                "flight_recorder": op.get("fr")}.items() if v is not None}
            name = _name(op)
            cat = op.get("kind", "p2p")
            if pending:
                word, cat = ("IN FLIGHT AT EXIT", "in_flight") if op.get("in_flight") else ("PENDING", "pending")
                self.events += [
                    {"ph": "B", "name": f"{word} {name}", "cat": cat, "pid": rank,
                     "tid": lane, "ts": ts, "args": args},
                    {"ph": "i", "name": f"{word.lower()}: {name}", "cat": cat, "pid": rank,
                     "tid": lane, "ts": ts, "s": "t"},
                    {"ph": "E", "pid": rank, "tid": lane, "ts": round(end, 3)}]
            else:
                self.events.append({"ph": "X", "name": name, "cat": cat, "pid": rank, "tid": lane,
                                    "ts": ts, "dur": round(end - ts, 3), "args": args})
            if op.get("index") is not None:
                self.slices[(rank, op["index"])] = (lane, ts)
            self.last[rank] = (lane, ts)

    def _flows(self) -> None:
        flow = 0
        for (rank, index), state in sorted(self.model.items()):
            edge = state.get("blocked_on")
            if not edge or edge.get("rank") is None or (rank, index) not in self.slices:
                continue
            target = (self.slices.get((edge["rank"], edge["index"])) if edge.get("index") is not None
                      else None) or self.last.get(edge["rank"])
            if target is None:
                continue
            flow += 1
            lane, ts = self.slices[(rank, index)]
            name = f"waits for: {edge['reason']}"
            self.events += [
                {"ph": "s", "id": flow, "name": name, "cat": "wait-for", "pid": rank, "tid": lane,
                 "ts": ts},
                {"ph": "f", "bp": "e", "id": flow, "name": name, "cat": "wait-for",
                 "pid": edge["rank"], "tid": target[0], "ts": target[1]}]
