"""The ops of a trace's head window with the wait-for state of each, for a drawing of the whole
window (`report --format perfetto`): the join keeps only the first ops per rank in its timeline.

The states are those of the join's replay (`runreplay`: the same programs, roles and closed
prefixes, under the document's conditions), computed here so that the drawing takes finished data
and runs no analysis itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.analysis.runreplay import recorded_order
from auditor.analysis.uses import group_label
from auditor.analysis.waitfor.model import Conditions
from auditor.dynamic.trace import Trace


@dataclass(frozen=True)
class HeadOps:
    ops: dict[int, list[dict[str, Any]]]  # rank -> its ops in issue order
    model: dict[tuple[int, int], dict[str, Any]]  # (rank, op index) -> wait-for state
    cut: list[str]  # one sentence per rank whose head window does not hold all its ops


def head_ops(trace: Trace, doc: dict[str, Any]) -> HeadOps:
    """The ops of `trace` and their states in the replay of the document `doc` joined with it."""
    cut = [f"rank {r}: the trace's head window holds the first "
           f"{len(rt.starts('p2p')) + len(rt.starts('collective'))} of its {rt.ops} P2P ops and "
           f"collectives; later ones are not drawn, except those still pending (after a gap, "
           f"with no wait-for state)"
           for r, rt in trace.ranks.items() if not rt.complete]
    return HeadOps(_ops_from_trace(trace), _model(trace, doc), cut)


def _ops_from_trace(trace: Trace) -> dict[int, list[dict[str, Any]]]:
    """Per rank, the head's ops in issue order (index among P2P/collective ops, or None for setup),
    then the pending ops beyond the head (index None: their place in the run is not kept)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for rank, rt in trace.ranks.items():
        ops, index = [], -1
        head = rt.starts()
        in_head = {id(e) for e in head}
        for e in head + [e for e in rt.open_ops if id(e) not in in_head]:
            kind = e.get("kind", "p2p")
            if kind in ("p2p", "collective") and id(e) in in_head:
                index += 1
            end = e.get("end")
            site = e.get("site") or {}
            ops.append({
                "index": index if kind != "setup" and id(e) in in_head else None, "kind": kind,
                "api": e.get("api"),
                "peer": e.get("peer"), "t": e.get("t"),
                "t_end": end.get("t") if end else None, "ended": end is not None,
                "in_flight": end is None and rt.ended,
                "error": (end or {}).get("error"),
                "group": group_label(e["group"]) if isinstance(e.get("group"), dict) else e.get("desc"),
                "bytes": e.get("bytes") if isinstance(e.get("bytes"), int) else None,
                "batch": e.get("batch"), "batched": e.get("batched"),
                "where": f"{site.get('path')}:{site.get('line')} {site.get('function')}" if site else None,
                "fr": e.get("fr")})
        out[rank] = ops
    return out


def _model(trace: Trace, doc: dict[str, Any]) -> dict[tuple[int, int], dict[str, Any]]:
    """The wait-for state of every replayed op in the join's replay: its order, under the
    conditions it wrote (every field, the backend too, as Conditions.to_json wrote them)."""
    conditions = Conditions(**doc["run"]["waitfor"]["conditions"])
    analysis, _ = recorded_order(trace, doc).replay(conditions)
    return {(r, o.op.index): {"model": o.state, "communicator": o.communicator,
                              "blocked_on": o.blocked_on, "bytes": o.op.nbytes}
            for r, rs in analysis.ranks.items() for o in rs.ops}
