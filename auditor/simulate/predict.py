"""What the simulated run means for the real one: its recorded op order replayed by the wait-for
model under the script's conditions, and joined with the scan (which sites fired).

The run itself happened on gloo, where every order completes; what it contributes is the order.
The verdict is a hypothesis about the cluster: "under these conditions this order would hang".
Conditions the config leaves open are replayed each way; where the ways disagree, the verdict
is inconclusive and says which input decides it.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from auditor.analysis.join import join
from auditor.analysis.runreplay import recorded_order
from auditor.analysis.waitfor.deadlock import Deadlock
from auditor.analysis.waitfor.model import Conditions
from auditor.analysis.waitfor.result import Analysis
from auditor.analysis.waitfor.sizes import size_words
from auditor.dynamic.trace import Trace
from auditor.analysis.ncclbounds import Decision, decide
from auditor.dynamic.nccllog import read_logs
from auditor.simulate import titan_plan
from auditor.simulate.plan import SimulationPlan, PlanValue


@dataclass
class Replay:
    conditions: Conditions
    analysis: Analysis
    deadlock: Deadlock  # the two verdicts under these conditions

    @property
    def cycle_ranks(self) -> list[int]:
        return _cycle_ranks(self.analysis)

    def to_json(self) -> dict[str, Any]:
        return {"conditions": self.conditions.to_json(), "words": self.conditions.words(),
                "hang": self.deadlock.will, "can_deadlock": self.deadlock.can,
                "cycle_ranks": self.cycle_ranks, "cycle": self.analysis.cycle,
                "deadlock": self.deadlock.to_json()}


def as_issued(trace: Trace, coalesce: bool) -> Trace:
    """The recorded ops as the cluster's torch would run them: gloo ran every
    batch_isend_irecv op by op; `coalesce` says whether the script's torch, backend and debug
    level make it one coalesced batch (in the head, the pending ops and the op counts alike)."""
    ranks = {}
    for rank, rt in trace.ranks.items():
        issued: dict[int, dict[str, Any]] = {}  # id(recorded start) -> it as issued: one copy
        usage: Counter = Counter()
        for use, n in rt.usage.items():
            usage[use._replace(batched=coalesce) if use.via == "batch_isend_irecv" else use] += n
        ranks[rank] = replace(rt, head=[_as_run(e, coalesce, issued) for e in rt.head],
                              open_ops=[_as_run(e, coalesce, issued) for e in rt.open_ops],
                              usage=usage)
    return replace(trace, ranks=ranks)


def _as_run(e: dict[str, Any], coalesce: bool, issued: dict[int, dict[str, Any]]) -> dict[str, Any]:
    if e.get("via") != "batch_isend_irecv":
        return e
    return issued.setdefault(id(e), dict(e, batched=coalesce))


def with_transport(p: SimulationPlan, transport: str | None) -> SimulationPlan:
    """`p` with the transport the user named (`--transport`) instead of the one its layout gives."""
    if transport is None:
        return p
    values = dict(p.values)
    values["transport"] = PlanValue("transport", transport, "--transport " + transport)
    return replace(p, values=values, candidates={**p.candidates, "transport": [transport]})


def cluster(doc: dict[str, Any], p: SimulationPlan, logs: list[Path]) -> dict[str, Decision]:
    """What the `--nccl-log` files decide of each transport the plan leaves possible (empty: no
    log), read against the scan's torch pin; bad input is refused before anything runs."""
    if not logs:
        return {}
    torch = doc.get("config", {}).get("effective", {}).get("torch_version")
    log = read_logs(logs)
    return {t: decide(log, t, torch if isinstance(torch, str) else None)
            for t in p.candidates["transport"]}


def replays(doc: dict[str, Any], trace: Trace, p: SimulationPlan,
            logs: dict[str, Decision] | None = None) -> list[Replay]:
    """The recorded order under every combination of the plan's possible conditions, each with
    its two deadlock verdicts (the transport's candidates, or those the cluster's log states,
    `cluster`; the recorded sizes): the replay the join of the scan `doc` with the run makes
    (`runreplay`)."""
    out = []
    c = p.candidates
    orders = {co: recorded_order(as_issued(trace, co), doc) for co in c["coalesce"]}
    for coalesce, init, transport in itertools.product(c["coalesce"], c["init"], c["transport"]):
        order = orders[coalesce]
        conditions = Conditions.for_transport(transport, init, coalesce)
        if logs and transport in logs:
            conditions = conditions.with_bounds(logs[transport].transports)
        out.append(Replay(conditions, order.replay(conditions)[0],
                          order.deadlock(conditions)))
    return out


def joined(doc: dict[str, Any], trace: Trace, shown: Replay) -> dict[str, Any]:
    """The scan joined with the run as issued under `shown`'s conditions, replayed under them
    whole (timeline, findings: the report of the replay the prediction shows)."""
    c = shown.conditions
    return join(doc, as_issued(trace, bool(c.coalesce)), conditions=c)


def simulation(doc: dict[str, Any], p: SimulationPlan, results: list[Replay], schedule: str,
               seconds: float, logs: dict[str, Decision] | None = None) -> dict[str, Any]:
    """The `simulation` object of the JSON output (`doc` is the joined document)."""
    can, will = agreed(r.deadlock.can for r in results), agreed(r.deadlock.will for r in results)
    shown = pick(results)
    run = doc["run"]
    unpredicted = [m["site_id"] or f"{m['path']}:{m['line']}" for m in run["misses"]
                   if not (p.runner == titan_plan.RUNNER and m["path"] == titan_plan.DRIVER)]
    fired = sorted(s["id"] for s in doc["sites"] if s.get("fired"))
    verdict = {True: "hang", False: "completes", None: "inconclusive"}[will]
    return {
        "verdict": verdict,
        "runner": p.runner,
        "hypothetical": statement(p, results, shown, verdict),
        "ranks": [{"rank": s, **({k: v for k, v in p.layout[s].items() if k != "stage"}
                                 if p.layout else {})} for s in range(p.get("pipeline_size"))],
        "schedule": schedule,
        "virtual_stages": p.get("virtual_stages"),
        "microbatches": p.get("microbatches"),
        "message_bytes": p.message_bytes,
        "message": p.size_words(),
        "inputs": p.to_json(),
        "conditions": {**shown.conditions.to_json(), "words": shown.conditions.words()},
        "replays": [r.to_json() for r in results],
        "hang": will,
        # MUST's two verdicts: the shown replay's, with can/will as every replay agrees (None:
        # they differ, or a size lies between a transport's bounds).
        "deadlock": {**shown.deadlock.to_json(), "can_deadlock": can, "will_deadlock": will,
                     "open_conditions": len({r.deadlock.will for r in results}) > 1},
        "cycle_ranks": shown.cycle_ranks,
        "cycle": shown.analysis.cycle,
        "blocked": {str(r): s.words for r, s in shown.analysis.ranks.items()
                    if s.cpu != "finished"},
        "fired": fired,
        "unpredicted": unpredicted,
        "unfired": [{"site_id": u["site_id"], "why": u["why"]} for u in run["unfired"]],
        # Sends and receives that pair up but disagree in size, dtype or role (prev/next).
        "mismatched_pairs": run["waitfor"].get("mismatched_pairs", []),
        "patches": [x.to_json() for x in p.patches],
        "startup_errors": p.startup_errors,
        "seconds": round(seconds, 1),
        # What the cluster's NCCL_DEBUG=INFO logs decided, per modelled transport (--nccl-log).
        "nccl_log": {t: d.to_json() for t, d in (logs or {}).items()} or None,
    }


def agreed(values: Any) -> bool | None:
    """True or False where every replay says so; None where they differ or one is undecided."""
    seen = set(values)
    return seen.pop() if len(seen) == 1 else None


def pick(results: list[Replay]) -> Replay:
    """The replay to show: the first that will hang (the risk), else one that may, else the first."""
    return next((r for r in results if r.deadlock.will), None) \
        or next((r for r in results if r.deadlock.will is None), results[0])


def statement(p: SimulationPlan, results: list[Replay], shown: Replay, verdict: str) -> str:
    """The verdict in one sentence, hypothetical where it is a prediction (the zero-buffer cycle
    is the `can deadlock` line under it)."""
    where = f"under {shown.conditions.words()}"
    d = shown.deadlock
    if verdict == "completes":
        can = "; but it can deadlock where sends are not buffered" if d.can else ""
        return f"{where} this op order completes{can}"
    if verdict == "hang":
        return f"{where} this op order would hang: {_cycle_words(shown)}"
    if len({r.deadlock.will for r in results}) > 1:
        open_ = [v for k, v in p.values.items() if k in p.candidates and v.value is None]
        decide = "; ".join(v.provenance for v in open_) or "the conditions above"
        return (f"it hangs under some of the open conditions and completes under others "
                f"(e.g. {where} it can deadlock); what decides it: {decide}")
    each = "; ".join(f"{v.transport.name}: {v.why}" for v in d.transports)
    return f"this op order can deadlock; whether it will {where} is undecided: {each}"


def _cycle_words(r: Replay) -> str:
    ranks = r.cycle_ranks
    if not ranks:
        return "a rank waits for an op no rank issues"
    stages = " and ".join(map(str, ranks))
    blocked = [o for rank in ranks for o in r.analysis.ranks[rank].ops if o.state == "blocked"]
    sends = {(o.op.api, o.op.nbytes, o.communicator) for o in blocked if o.op.kind == "send"}
    if len(blocked) == len(ranks) and len(sends) == 1:
        api, nbytes, comm = sends.pop()
        return (f"stages {stages} both {api.upper()} {size_words(nbytes)} first on "
                f"communicator {comm} ({r.analysis.cycle})")
    return f"stages {stages} wait on each other ({r.analysis.cycle})"


def _cycle_ranks(a: Analysis) -> list[int]:
    """The ranks on a wait-for cycle, from each stuck op's and CPU's edge to another rank."""
    edges: dict[int, set[int]] = {}
    for rank, state in a.ranks.items():
        targets = {e["rank"] for e in state.blocked_on if e.get("rank") is not None}
        targets |= {o.blocked_on["rank"] for o in state.ops
                    if o.blocked_on and o.blocked_on.get("rank") is not None}
        targets.discard(rank)
        if targets:
            edges[rank] = targets
    finished: set[int] = set()
    for start in sorted(edges):  # depth-first, in rank order: the first cycle found
        path, todo = [start], [sorted(edges[start])]
        while path:
            if not todo[-1]:
                finished.add(path.pop())
                todo.pop()
                continue
            nxt = todo[-1].pop(0)
            if nxt in path:
                return sorted(path[path.index(nxt):])
            if nxt in finished:
                continue
            path.append(nxt)
            todo.append(sorted(edges.get(nxt, ())))
    return []
