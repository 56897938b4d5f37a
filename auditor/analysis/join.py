"""Join a scan document with a recorded run: which predicted sites fired on which ranks, what the
run did that the scan did not predict, and what the recorded op order means under NCCL.

The scan says what can happen; a trace says what did. Where they disagree one of them is wrong,
and the user has to know which before trusting either: a site that fired but was not predicted
(a static miss) is listed first. Events are matched to sites by file, function, API and line
range; when the trace came from another release (lines moved), by stable id, either exactly
through that release's own site inventory (`trace_sites`) or by the order of lines within a
function when that order leaves no doubt.

Everything here is built from the trace reader's aggregates (op counts per site, group and peer)
and windows (each rank's first ops, the ops that never ended), never from every event, so a
1,024-rank trace of 20k events per rank fits in memory. The replay's meaning depends on whether
the run completed (every op has an end line, none raised): a completed run did not deadlock, so
a hang the model finds in its order is a conditional warning ("under NCCL over the network
transport this order would hang"); a run that stopped in an op gets the cycle as an error.
What each line of code did is read in `uses`; the findings the join adds are worded in
`runfindings`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from auditor.analysis import peerend
from auditor.analysis.runevidence import evidence_complete, stopped_findings, undecided_evidence
from auditor.analysis.runfindings import replay_findings, run_findings
from auditor.analysis.runreplay import recorded_order
from auditor.analysis.sitestatus import SiteStatus
from auditor.analysis.uses import Key, Use, group_label, read_uses
from auditor.analysis.waitfor.model import Conditions, Group, Op, communicator_for
from auditor.analysis.waitfor.result import Analysis
from auditor.analysis.waitfor.transports import Transport
from auditor.config.runconfig import RunConfig
from auditor.dynamic import flight_recorder
from auditor.dynamic.backends import GLOO, backend, of_groups
from auditor.dynamic.rankfile import IN_FLIGHT
from auditor.dynamic.trace import Trace

# Ops per rank drawn in the timeline, and ranks drawn: enough for the first exchanges of a
# pipeline schedule (where lazy-init deadlocks happen), small enough for a 1,024-rank report.
TIMELINE_OPS = 16
TIMELINE_RANKS = 48

def join(
    doc: dict[str, Any],
    trace: Trace,
    trace_sites: list[dict[str, Any]] | None = None,
    transport: str | None = None,
    init: str | None = None,
    conditions: Conditions | None = None,
    bounds: tuple[Transport, ...] = (),
) -> dict[str, Any]:
    """A new document: `doc` with `fired` on every site, a `run` section and the run's findings.

    `trace_sites`: the site inventory (SITE dicts) of the sources the trace was recorded with,
    when they are not the scanned ones. The recorded order is replayed under what the trace
    says (lazy or eager groups; nccl: network transport, the pipeline neighbours of a multi-node
    job); `transport` and `init` replace just that part of it, `conditions` all of it (simulate:
    the conditions its prediction replayed, so that the report judges the same replay);
    `bounds`: the transports a cluster's NCCL log states (auditor.analysis.ncclbounds) for the NCCL
    questions."""
    out = dict(doc)
    out.pop("verdict", None)  # the scan's verdict does not speak for the run: judge it again
    sites = [dict(s) for s in doc["sites"]]
    out["sites"] = sites
    uses = read_uses(trace)
    index = _SiteIndex(sites)
    mapped, how = index.map(uses, trace_sites)
    fired: dict[str, Counter] = {}
    for key, sid in mapped.items():
        fired.setdefault(sid, Counter()).update(uses[key].fired)
    for s in sites:
        s["fired"] = {str(r): n for r, n in sorted(fired.get(s["id"], Counter()).items())}

    recorded = None  # the conditions the run had, before --transport/--init override them
    if conditions is None:
        conditions = recorded = _conditions(trace)
        if transport is not None or init is not None:
            conditions = _override(conditions, transport, init)
        if backend(conditions.backend).runs_nccl:
            conditions = conditions.with_bounds(bounds)
    order = recorded_order(trace, doc)
    model, replayed = order.replay(conditions)
    # A rank without evidence, or whose process never closed its file, may be the one stuck.
    completed = _completed(trace) and evidence_complete(trace)
    # On a CPU (gloo) recording, the NCCL questions are asked of what NCCL would do with it.
    nccl_like = conditions
    if not backend(conditions.backend).runs_nccl:
        nccl_like = Conditions.for_transport("net", conditions.init).with_bounds(bounds)
    run_backend = (recorded or conditions).backend
    ran_on = "" if backend(run_backend).runs_nccl else run_backend
    cut = {str(r): f"{rt.path.name}:{rt.stopped_line}" for r, rt in trace.ranks.items()
           if rt.stopped is not None}
    # Can this order deadlock (zero buffering), and will it over the transport asked (--transport,
    # else the network's candidates) with the recorded sizes? Not asked of a cut order (below).
    deadlock = None if cut else replace(order.deadlock(nccl_like), ran_on=ran_on)
    by_id = {s["id"]: s for s in sites}
    # No target: no scan was given (report --trace alone), so nothing fired "outside" it.
    misses = _misses(uses, mapped, by_id, sites, doc["targets"]) if doc.get("targets") else []
    waitfor = {"hang": model.hang, "conditions": model.conditions.to_json(),
               "cycle": model.cycle, "blocked": model.blocked, "replayed_ops": replayed,
               "mismatched_pairs": model.mismatched_pairs,
               "count_mismatches": _whole_counts(model.count_mismatches, trace),
               "cut_counts": _cut_counts(model.count_mismatches, trace),
               "complete": replayed == sum(rt.ops for rt in trace.ranks.values()),
               "run_completed": completed}
    if deadlock is not None:
        waitfor["deadlock"] = deadlock.to_json()
    else:
        # A rank's file ends where its recorder stopped (a full disk, ulimit -f), mid-batch as
        # often as not: the replay sees that end as the rank waiting there, and an exchange cut
        # on one side as unequal counts. Past the shortest common recorded prefix nothing is
        # evidence, so neither the replay's cycle nor its count check speaks, nor whether the
        # order can or will deadlock (a send/receive pair whose sides were both recorded still
        # does: FIFO pairing of prefixes is exact).
        waitfor.update(hang=None, cycle="", blocked=[], count_mismatches=[], cut_counts=[],
                       recording_stopped=cut)
    run: dict[str, Any] = {
        "trace": _trace_summary(trace),
        "matched": dict(Counter(how.values())),
        "misses": misses,
        "unfired": _unfired(sites, trace),
        "unresolved": _unresolved(sites),
        "pairs": _pairs(trace, nccl_like),
        "waitfor": waitfor,
        "timeline": _timeline(trace, model),
        "undecided": undecided_evidence(trace),
    }
    out["run"] = run
    findings = list(doc.get("findings", []))
    config = RunConfig.from_json(doc.get("config", {}))
    findings += [f.to_json() for f in run_findings(uses, mapped, by_id, run, config)]
    # Whose end the ranks' connection errors follow from, and a mismatch above it.
    ends = peerend.read(trace, run["waitfor"])
    findings += [f.to_json() for f in replay_findings(run["waitfor"], deadlock, ends)]
    # After the replay's: where the run crashed, the cycle or mismatch that explains it leads.
    findings += [f.to_json() for f in stopped_findings(trace, ends)]
    out["findings"] = findings
    return out


# --- what the run did ---------------------------------------------------------------------------
def join_run(doc: dict[str, Any], trace: Trace, **options: Any) -> dict[str, Any]:
    """`join`, plus what Flight Recorder dumps alone can say (the rank whose dump ends first)."""
    joined = join(doc, trace, **options)
    if any(rt.meta.get("source") == "flight-recorder" for rt in trace.ranks.values()):
        joined["findings"] += [f.to_json() for f in flight_recorder.findings(trace)]
    return joined


def no_scan() -> dict[str, Any]:
    """The document a run is joined with when no scan is given: no site, no target (so no fired
    line is a static miss or outside the scanned sources: nothing was scanned)."""
    return {"sites": [], "targets": [], "findings": []}


def _api_key(site: dict[str, Any]) -> tuple[str, str | None]:
    return (site["api"], site.get("op")) if site["api"] == "P2POp" else (site["api"], None)


def _ordinal(site_id: str) -> int:
    tail = site_id.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


class _SiteIndex:
    def __init__(self, sites: list[dict[str, Any]]) -> None:
        # By the first line of the call expression: the recorder names the same line (the
        # call's own positions), and a line inside another release's multi-line call is not it.
        self.by_line: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.by_function: dict[tuple[str, str, str, str | None], list[dict[str, Any]]] = {}
        self.by_id = {s["id"]: s for s in sites}
        for s in sites:
            self.by_line.setdefault((s["path"], s["line"]), []).append(s)
            self.by_function.setdefault((s["path"], s["function"], *_api_key(s)), []).append(s)
        for group in self.by_function.values():
            group.sort(key=lambda s: _ordinal(s["id"]))

    def at_line(self, key: Key) -> dict[str, Any] | None:
        path, line, _, function, api, op = key
        for s in self.by_line.get((path, line), ()):
            if s["function"] == function and _api_key(s) == (api, op):
                return s
        return None

    def map(self, uses: dict[Key, Use], trace_sites: list[dict[str, Any]] | None
            ) -> tuple[dict[Key, str], dict[Key, str]]:
        """Key -> site id, and how each was matched: "id" through the inventory of the trace's
        own sources when given, else "line", and "order" for what neither placed."""
        mapped: dict[Key, str] = {}
        how: dict[Key, str] = {}
        theirs = _SiteIndex(trace_sites) if trace_sites is not None else None
        rest = []
        for key in uses:
            if theirs is not None:
                site = theirs.at_line(key)
                if site is not None and site["id"] in self.by_id:
                    mapped[key], how[key] = site["id"], "id"
                    continue
            site = self.at_line(key)
            if site is not None:
                mapped[key], how[key] = site["id"], "line"
            else:
                rest.append(key)
        # Lines moved and no inventory of the trace's sources: the i-th distinct fired line of
        # a function and API is its i-th site, when every one of them fired or there is one.
        lines: dict[tuple, list[Key]] = {}
        for key in rest:
            path, _, _, function, api, op = key
            lines.setdefault((path, function, api, op if api == "P2POp" else None), []).append(key)
        for fkey, keys in lines.items():
            candidates = self.by_function.get(fkey, [])
            if not candidates or len(keys) != len(candidates):
                continue
            for key, site in zip(sorted(keys, key=lambda k: k[1]), candidates):
                mapped[key], how[key] = site["id"], "order"
        return mapped, how


# --- the sections of `run` ----------------------------------------------------------------------
def _misses(uses: dict[Key, Use], mapped: dict[Key, str], by_id: dict[str, dict[str, Any]],
            sites: list[dict[str, Any]], targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fired but not predicted: code the scan has no site for, and sites it ruled unreachable.

    A line is inside the scan where its path starts in a target (its `roots`; a document written
    before they were recorded: where some site's path starts). A line whose ops another line
    chose (the recorder names the first frame outside the chosen code's package: torchtitan's
    `self.pp_schedule.step(...)` for the ops torch's schedule chose) is judged by that code:
    outside the targets, it is what to scan; inside, with a reachable site in its file, the scan
    predicted those ops there (not a miss); inside without one, the inventory missed them.
    `in_targets`: whether the code that issued the ops is in the scanned sources."""
    roots = {s["path"].split("/", 1)[0] for s in sites}
    roots |= {r for t in targets for r in t.get("roots") or []}
    reached = {s["path"] for s in sites if SiteStatus.of(s).reached}
    # A P2POp line's ops were chosen where its batch_isend_irecv call's were (read_uses keeps
    # `chosen` on the call's line).
    chosen = {k[:4]: u.chosen for k, u in uses.items() if k[5] is None and u.chosen}
    out: list[dict[str, Any]] = []
    for key, u in uses.items():
        path, line, _, function, api, op = key
        sid = mapped.get(key)
        entry: dict[str, Any] = {"path": path, "line": line, "function": function,
                 "api": f"{api}({op})" if op else api, "fired": _per_rank(u.fired),
                 "calls": sum(u.fired.values())}
        if sid is None:
            chooser = _chooser(chosen.get(key[:4], u.chosen), path, line)
            where = chooser.rsplit(":", 1)[0] if chooser else path
            inside = where.split("/", 1)[0] in roots
            if chooser and inside and where in reached:
                continue  # the scan's reachable sites of the chooser's file predict these ops
            if chooser:
                entry["chosen"] = chooser
                why = (f"its ops were chosen at {chooser} of the scanned sources, whose file has no "
                       "reachable P2P site: the static inventory missed them" if inside else
                       f"its ops were chosen at {chooser}, outside the scanned sources (this line is "
                       f"{'in' if path.split('/', 1)[0] in roots else 'outside'} them): scan that code "
                       "too (add it as a --target)")
            else:
                why = ("no P2P site of the scanned sources is at this line: the static inventory "
                       "missed it" if inside else
                       "outside the scanned sources: scan this code too (add it as a --target)")
            entry.update(site_id=None, in_targets=inside, why=why)
            out.append(entry)
        elif SiteStatus.of(by_id[sid]).unreachable:
            site = by_id[sid]
            entry.update(site_id=sid, in_targets=True, why=(
                f"the scan ruled it unreachable ({site.get('reason') or 'a guard is false'}"
                + (f"; guard {site['guards'][-1]}" if site.get("guards") else "") + ")"))
            out.append(entry)
    out.sort(key=lambda m: (not m["in_targets"], -m["calls"], m["path"], m["line"]))
    return out


def _chooser(chosen: Counter, path: str, line: int) -> str | None:
    """The line that chose most of a line's ops, where another line than itself chose them."""
    others = [(n, c) for c, n in chosen.items() if c != f"{path}:{line}"]
    return max(others)[1] if others else None


def _unfired(sites: list[dict[str, Any]], trace: Trace) -> list[dict[str, Any]]:
    """Predicted reachable but never fired, with the tests on the way that can explain it."""
    stopped = not _completed(trace)
    out = []
    for s in sites:
        if not SiteStatus.of(s).reached or s["fired"]:
            continue
        if s.get("conditions"):
            why = "depends on run-time data on the way: " + "; ".join(s["conditions"])
        elif s.get("guards"):
            why = "its guards held under the config, yet it did not fire: " + "; ".join(s["guards"])
        else:
            why = "nothing on the way tests anything, yet it did not fire"
        if stopped:
            why += " (the run stopped early: ops were still pending or ranks left no trace)"
        out.append({"site_id": s["id"], "path": s["path"], "line": s["line"],
                    "function": s["function"], "why": why})
    return out


def _unresolved(sites: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sites the scan could not place on or off a path: the run decides those it reached."""
    return [{"site_id": s["id"], "path": s["path"], "line": s["line"], "function": s["function"],
             "fired": bool(s["fired"]), "reason": s.get("reason", "")}
            for s in sites if SiteStatus.of(s).reach_unknown]


def _per_rank(counter: Counter) -> dict[str, int]:
    return {str(r): n for r, n in sorted(counter.items())}


def _trace_summary(trace: Trace) -> dict[str, Any]:
    metas = [rt.meta for rt in trace.ranks.values()]
    backends = sorted({str(g["backend"]) for rt in trace.ranks.values() for g in rt.groups
                       if g.get("backend")})
    return {
        "root": str(trace.root), "ranks": len(trace.ranks), "world_size": trace.world_size,
        "missing": trace.missing, "missing_count": trace.missing_count,
        "silent": {str(r): why for r, why in trace.silent.items()}, "skipped": trace.skipped,
        "torch": sorted({str(m["torch"]) for m in metas if m.get("torch")}),
        "backends": backends,
        "pending": {str(r): len(rt.pending()) for r, rt in trace.ranks.items() if rt.pending()},
        "incomplete": {str(r): f"{rt.path.name}:{rt.stopped_line}: {rt.stopped}"
                       for r, rt in trace.ranks.items() if rt.stopped is not None},
        "raised": {str(r): len(rt.raised) for r, rt in trace.ranks.items() if rt.raised},
        "hang_files": sorted(r for r, rt in trace.ranks.items() if rt.hang is not None),
        "events": sum(rt.lines for rt in trace.ranks.values()),
    }


def _whole_counts(counts: list[dict[str, Any]], trace: Trace) -> list[dict[str, Any]]:
    """The count mismatches the trace shows whole: a short side that never reached a later
    phase with its peer counts where its process then exited by itself, or went on to wait in
    another op (a barrier, another peer) until the run was stopped: its program went past the
    exchange. One that was killed (no exit record), or sat outside any op (a sleep, a
    computation) when the run was stopped, had its exchange cut: the ops it never reached are
    not missing from its program."""
    def whole(rank: int) -> bool:
        rt = trace.ranks.get(rank)
        if rt is None or rt.exit is None:
            return False
        return rt.exit.get("how") == "exit" or bool(rt.pending())
    return [c for c in counts if c["moved_on"] or whole(c["short"])]


def _cut_counts(counts: list[dict[str, Any]], trace: Trace) -> list[dict[str, Any]]:
    """The count mismatches whose short side ended with no exit record outside any op: killed
    between ops (its exchange cut) or ended by its own program past Python's exit handlers
    (an os._exit: its count is short). The trace cannot tell the two apart; the report lists
    the count beside that end (runevidence) with the launcher's exit code that decides."""
    def cut(rank: int) -> bool:
        rt = trace.ranks.get(rank)
        return (rt is not None and rt.exit is None and rt.unclosed is not None
                and rt.stopped is None and not rt.pending())
    return [c for c in counts if not c["moved_on"] and cut(c["short"])]


def _completed(trace: Trace) -> bool:
    """Every rank's file is there, every recorded op has an end line and none raised, no process died of an exception: whatever
    the model says of its order, this run did not deadlock. A missing rank may be the one stuck,
    and so may a rank whose recorder stopped before it did."""
    return not trace.missing and not any(rt.pending() or rt.raised or rt.stopped is not None
                                         or rt.crash is not None for rt in trace.ranks.values())


def _conditions(trace: Trace) -> Conditions:
    """What the run ran on: gloo's own model for a gloo trace; for NCCL, the network transport
    (the transport is not recorded, and it buffers least) and the init mode the groups had: lazy
    where the trace does not say or its groups disagree, the mode under which creating a
    communicator can block (`--init eager` replays the other)."""
    init = trace.init_mode() or "lazy"
    if of_groups(g for rt in trace.ranks.values() for g in rt.groups) is GLOO:
        return Conditions.gloo(init)
    return Conditions.for_transport("net", init=init)


def _override(recorded: Conditions, transport: str | None, init: str | None) -> Conditions:
    """`--transport` / `--init` replace just what they name; `--transport gloo` is gloo's model."""
    transport = transport or recorded.transport
    init = init or recorded.init
    if transport == "gloo":
        return Conditions.gloo(init)
    return Conditions.for_transport(transport, init, recorded.coalesce)


def _pairs(trace: Trace, conditions: Conditions) -> list[dict[str, Any]]:
    """Rank pairs whose P2P ops run on more than one communicator under `conditions`."""
    comms: dict[tuple[int, int], dict[str, set[str]]] = {}
    for rank, rt in trace.ranks.items():
        groups = [Group(tuple(sorted(g["ranks"])), str(g.get("desc") or ""))
                  for g in rt.groups]
        for u in rt.usage:
            if u.kind != "p2p" or u.peer is None or u.group < 0:
                continue
            coalesced = bool(u.batched)  # a batched op without a batch id: its window's batch
            op = Op(rank, 0, u.api, groups[u.group], u.peer, coalesced=u.batched,
                    batch=0 if coalesced or u.in_batch else None)
            comm = communicator_for(op, conditions, coalesced)
            pair = (min(rank, u.peer), max(rank, u.peer))
            how = "coalesced batch" if coalesced else "unbatched op"
            comms.setdefault(pair, {}).setdefault(comm.name, set()).add(
                f"{how} on {groups[u.group].label}")
    return [{"ranks": list(pair), "communicators": {c: sorted(h) for c, h in sorted(by.items())}}
            for pair, by in sorted(comms.items()) if len(by) > 1]


def _timeline(trace: Trace, model: Analysis) -> dict[str, Any]:
    """The first ops of each rank in issue order (setup calls included), with what the trace
    and the wait-for model say about each: the picture of which rank waits where."""
    states = {r: {o.op.index: o for o in rs.ops} for r, rs in model.ranks.items()}
    creating = _creations(model)
    lanes: list[dict[str, Any]] = []
    for rank, rt in trace.ranks.items():
        events, index = [], -1
        for e in rt.head:
            if e.get("phase") != "start":
                continue
            kind = e.get("kind", "p2p")
            if kind in ("p2p", "collective"):
                index += 1
                if index >= TIMELINE_OPS:
                    break
            site = e.get("site") or {}
            end = e.get("end")
            item = {
                "kind": kind, "api": e.get("api"), "peer": e.get("peer"), "t": e.get("t"),
                "group": group_label(e.get("group") or {}) if e.get("group") else e.get("desc"),
                "batched": e.get("batched"), "batch": e.get("batch"),
                "comm_init": e.get("comm_init"),
                "where": f"{site.get('path')}:{site.get('line')} {site.get('function')}",
                **({"chosen": f"{e['chosen'].get('path')}:{e['chosen'].get('line')} "
                              f"{e['chosen'].get('function')}"} if e.get("chosen") else {}),
                "recorded": (IN_FLIGHT if rt.ended else "pending") if end is None else
                            ("error" if end.get("how") == "raise" else "done"),
            }
            op = states.get(rank, {}).get(index) if kind != "setup" else None
            if op is not None:
                item.update(index=index, bytes=op.op.nbytes, communicator=op.communicator,
                            model=op.state, blocked_on=op.blocked_on)
                if creating.get(rank, (None,))[0] == index:
                    item.update(model="creating", blocked_on=creating[rank][1])
            events.append(item)
        lanes.append({"rank": rank, "events": events,
                      "stuck": any(ev["recorded"] != "done" for ev in events)
                      or any(ev.get("model") in ("blocked", "queued") for ev in events)})
    lanes.sort(key=lambda ln: (not ln["stuck"], ln["rank"]))
    shown = sorted(lanes[:TIMELINE_RANKS], key=lambda ln: ln["rank"])
    return {"ops_per_rank": TIMELINE_OPS, "ranks": shown, "not_shown": len(lanes) - len(shown)}


def _creations(model: Analysis) -> dict[int, tuple[int, dict[str, Any]]]:
    """Ranks stuck inside a communicator creation: (the op creating it, the member it waits for,
    at the op that member is stuck in). These are the edges of a lazy-init deadlock."""
    at: dict[int, tuple[int, str]] = {}
    members: dict[int, tuple[int, ...]] = {}
    for rank, rs in model.ranks.items():
        if rs.cpu != "creating":
            continue
        first = next((o for o in rs.ops if o.state == "not_issued"), None)
        if first is None:
            continue
        at[rank] = (first.op.index, first.communicator)
        members[rank] = first.members
    out = {}
    for rank, (index, comm) in at.items():
        for m in members[rank]:
            if m != rank and at.get(m, (None, comm))[1] != comm:
                where = at.get(m)
                out[rank] = (index, {
                    "rank": m, "index": where[0] if where else None,
                    "reason": f"inside the creation of {comm}, which needs rank {m}"
                              + (f", itself creating {where[1]}" if where else "")})
                break
    return out
