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
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from auditor import rulebook
from auditor.analysis import waitfor
from auditor.dynamic.trace import Trace, read_trace_dir
from auditor.findings import Finding

# Ops per rank drawn in the timeline, and ranks drawn: enough for the first exchanges of a
# pipeline schedule (where lazy-init deadlocks happen), small enough for a 1,024-rank report.
TIMELINE_OPS = 16
TIMELINE_RANKS = 48
# The wait-for replay is cut to this many ops in total (a prefix per rank: 32 each on 1,024
# ranks, about 2 s here). Lazy-init deadlocks happen in the first exchanges, and a cycle found in
# a prefix is a cycle of the whole run: later ops cannot unblock earlier ones.
REPLAY_OPS = 32_768
EXAMPLES = 8  # ranks or pairs named in a finding's message

# (path, line, end_line, function, api, op): one line of code as the trace names it.
Key = tuple[str, int, int, str, str, "str | None"]


@dataclass
class _Use:
    """What one line of code did in the run."""

    fired: Counter = field(default_factory=Counter)  # rank -> calls
    unbatched: dict[str, Counter] = field(default_factory=dict)  # group label -> rank -> ops
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)  # label -> recorded group
    via_batch: bool = False  # its ops came from batch_isend_irecv


def join(
    doc: dict[str, Any],
    traces: Trace | str | os.PathLike[str],
    trace_sites: list[dict[str, Any]] | None = None,
    transport: str | None = None,
    init: str | None = None,
) -> dict[str, Any]:
    """A new document: `doc` with `fired` on every site, a `run` section and the run's findings.

    `trace_sites`: the site inventory (SITE dicts) of the sources the trace was recorded with,
    when they are not the scanned ones. The recorded order is replayed under what the trace
    says (lazy or eager groups; nccl: network transport, the pipeline neighbours of a multi-node
    job); `transport` and `init` replace just that part of it."""
    trace = traces if isinstance(traces, Trace) else read_trace_dir(traces)
    out = dict(doc)
    out.pop("verdict", None)  # the scan's verdict does not speak for the run: judge it again
    sites = [dict(s) for s in doc["sites"]]
    out["sites"] = sites
    uses = _uses(trace)
    index = _SiteIndex(sites)
    mapped, how = index.map(uses, trace_sites)
    fired: dict[str, Counter] = {}
    for key, sid in mapped.items():
        fired.setdefault(sid, Counter()).update(uses[key].fired)
    for s in sites:
        s["fired"] = {str(r): n for r, n in sorted(fired.get(s["id"], Counter()).items())}

    recorded = _conditions(trace)
    conditions = recorded
    if transport is not None or init is not None:
        conditions = _override(recorded, transport, init)
    programs = waitfor.programs_from_events({r: t.head for r, t in trace.ranks.items()},
                                            p2p_roles(doc["sites"]))
    totals = {r: rt.ops for r, rt in trace.ranks.items()}
    model, replayed = replay(programs, conditions, totals)
    completed = _completed(trace)
    # On a CPU (gloo) recording, the NCCL questions are asked of what NCCL would do with it.
    nccl_like = conditions
    if conditions.backend == "gloo":
        nccl_like = waitfor.Conditions.for_transport("net", conditions.init)
    # Can this order deadlock (zero buffering), and will it over the transport asked (--transport,
    # else the network's candidates) with the recorded sizes?
    deadlock = waitfor.deadlock(lambda c: replay(programs, c, totals)[0], nccl_like,
                                torch_version=_torch_version(doc))
    by_id = {s["id"]: s for s in sites}
    misses = _misses(uses, mapped, by_id, sites)
    run = {
        "trace": _trace_summary(trace),
        "matched": dict(Counter(how.values())),
        "misses": misses,
        "unfired": _unfired(sites, trace),
        "unresolved": _unresolved(sites),
        "pairs": _pairs(trace, nccl_like),
        "waitfor": {"hang": model.hang, "conditions": model.conditions.to_json(),
                    "cycle": model.cycle, "blocked": model.blocked, "replayed_ops": replayed,
                    "mismatched_pairs": model.mismatched_pairs,
                    "complete": replayed == sum(rt.ops for rt in trace.ranks.values()),
                    "run_completed": completed, "deadlock": deadlock.to_json()},
        "timeline": _timeline(trace, model),
    }
    out["run"] = run
    findings = list(doc.get("findings", []))
    effective = doc.get("config", {}).get("effective", {})
    findings += [f.to_json() for f in _findings(uses, mapped, by_id, run, effective, trace)]
    findings += [f.to_json() for f in _replay_findings(run["waitfor"], deadlock)]
    out["findings"] = findings
    return out


# --- what the run did ---------------------------------------------------------------------------
def _uses(trace: Trace) -> dict[Key, _Use]:
    """Per line of code: calls per rank, and the unbatched ops per group, from the reader's op
    counts. An op from batch_isend_irecv counts for its P2POp line (`op_site`) and, once per
    batch, for the batch_isend_irecv line (`site`)."""
    uses: dict[Key, _Use] = {}

    def use(site: tuple | None, api: str, op: str | None) -> _Use:
        path, line, end_line, function = site or ("?", 0, 0, "?")
        key = (path, line, end_line, function, api, op)
        u = uses.get(key)
        if u is None:
            u = uses[key] = _Use()
        return u

    for rank, rt in trace.ranks.items():
        for u, n in rt.usage.items():
            if u.kind != "p2p":
                continue
            group = rt.groups[u.group] if u.group >= 0 else {}
            label = group_label(group)
            if u.via == "batch_isend_irecv":
                if u.op_site:  # where its P2POp was made, when the recorder saw it
                    use(u.op_site, "P2POp", u.api).fired[rank] += n
                call = use(u.site, "batch_isend_irecv", None)
                call.via_batch = True
                call.fired[rank] += 0  # counted once per batch below
            else:
                call = use(u.site, u.api, None)
                call.fired[rank] += n
            call.groups.setdefault(label, group)
            if u.batched is False:
                call.unbatched.setdefault(label, Counter())[rank] += n
        for site, calls in rt.batch_calls.items():
            use(site, "batch_isend_irecv", None).fired[rank] += calls
    for u in uses.values():
        u.fired = +u.fired  # drop the zero counts
    return uses


def group_label(group: dict[str, Any]) -> str:
    desc = group.get("desc")
    if desc:
        return str(desc)
    ranks = group.get("ranks")
    return "group[" + ",".join(map(str, ranks)) + "]" if ranks else "unknown group"


# --- matching ----------------------------------------------------------------------------------
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

    def map(self, uses: dict[Key, _Use], trace_sites: list[dict[str, Any]] | None
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
def _misses(uses: dict[Key, _Use], mapped: dict[Key, str], by_id: dict[str, dict[str, Any]],
            sites: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fired but not predicted: code the scan has no site for, and sites it ruled unreachable."""
    roots = {s["path"].split("/", 1)[0] for s in sites}
    out = []
    for key, u in uses.items():
        path, line, _, function, api, op = key
        sid = mapped.get(key)
        entry = {"path": path, "line": line, "function": function,
                 "api": f"{api}({op})" if op else api, "fired": _per_rank(u.fired),
                 "calls": sum(u.fired.values())}
        if sid is None:
            inside = path.split("/", 1)[0] in roots
            entry.update(site_id=None, in_targets=inside, why=(
                "no P2P site of the scanned sources is at this line: the static inventory "
                "missed it" if inside else
                "outside the scanned sources: scan this code too (add it as a --target)"))
            out.append(entry)
        elif by_id[sid].get("reachable") == "no":
            site = by_id[sid]
            entry.update(site_id=sid, in_targets=True, why=(
                f"the scan ruled it unreachable ({site.get('reason') or 'a guard is false'}"
                + (f"; guard {site['guards'][-1]}" if site.get("guards") else "") + ")"))
            out.append(entry)
    out.sort(key=lambda m: (not m["in_targets"], -m["calls"], m["path"], m["line"]))
    return out


def _unfired(sites: list[dict[str, Any]], trace: Trace) -> list[dict[str, Any]]:
    """Predicted reachable but never fired, with the tests on the way that can explain it."""
    stopped = not _completed(trace) or bool(trace.missing)
    out = []
    for s in sites:
        if s.get("reachable") != "yes" or s["fired"]:
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
            for s in sites if s.get("reachable") == "unknown"]


def _per_rank(counter: Counter) -> dict[str, int]:
    return {str(r): n for r, n in sorted(counter.items())}


def _trace_summary(trace: Trace) -> dict[str, Any]:
    metas = [rt.meta for rt in trace.ranks.values()]
    backends = sorted({str(g["backend"]) for rt in trace.ranks.values() for g in rt.groups
                       if g.get("backend")})
    return {
        "root": str(trace.root), "ranks": len(trace.ranks), "world_size": trace.world_size,
        "missing": trace.missing, "skipped": trace.skipped,
        "torch": sorted({str(m["torch"]) for m in metas if m.get("torch")}),
        "backends": backends,
        "pending": {str(r): len(rt.pending()) for r, rt in trace.ranks.items() if rt.pending()},
        "raised": {str(r): len(rt.raised) for r, rt in trace.ranks.items() if rt.raised},
        "hang_files": sorted(r for r, rt in trace.ranks.items() if rt.hang is not None),
        "events": sum(rt.lines for rt in trace.ranks.values()),
    }


def _torch_version(doc: dict[str, Any]) -> str | None:
    version = doc.get("config", {}).get("effective", {}).get("torch_version")
    return version if isinstance(version, str) else None


def _completed(trace: Trace) -> bool:
    """Every recorded op has an end line and none raised: whatever the model says of its order,
    this run did not deadlock."""
    return not any(rt.pending() or rt.raised for rt in trace.ranks.values())


def _conditions(trace: Trace) -> waitfor.Conditions:
    """What the run ran on: gloo's own model for a gloo trace; for NCCL, the network transport
    (the transport is not recorded, and it buffers least) and the init mode the groups had: lazy
    where the trace does not say or its groups disagree, the mode under which creating a
    communicator can block (`--init eager` replays the other)."""
    groups = [g for rt in trace.ranks.values() for g in rt.groups]
    init = trace.init_mode() or "lazy"
    if groups and not any(g.get("backend") == "nccl" for g in groups):
        return waitfor.Conditions.gloo(init)
    return waitfor.Conditions.for_transport("net", init=init)


def _override(recorded: waitfor.Conditions, transport: str | None, init: str | None
              ) -> waitfor.Conditions:
    """`--transport` / `--init` replace just what they name; `--transport gloo` is gloo's model."""
    transport = transport or recorded.transport
    init = init or recorded.init
    if transport == "gloo":
        return waitfor.Conditions.gloo(init)
    return waitfor.Conditions.for_transport(transport, init, recorded.coalesce)


def p2p_roles(sites: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    """(path, line) of each P2POp site -> the neighbour it addresses, as its peer expression
    names it (rules/megatron-core.toml [p2p_roles])."""
    pattern = re.compile(rulebook.load("megatron-core").section("p2p_roles")["peer_pattern"])
    out = {}
    for s in sites:
        if s.get("api") == "P2POp":
            m = pattern.search(s.get("peer") or "")
            if m:
                out[(s["path"], s["line"])] = m.group(1)
    return out


def replay(programs: dict[int, list[waitfor.Op]], conditions: waitfor.Conditions,
            totals: dict[int, int]) -> tuple[waitfor.Analysis, int]:
    """The replay of each rank's first ops (REPLAY_OPS in all), cut where no op is left waiting
    for a partner beyond another rank's cut (`waitfor.closed_prefixes`)."""
    per_rank = max(1, REPLAY_OPS // max(1, len(programs)))
    programs = waitfor.closed_prefixes(programs, conditions, per_rank, totals)
    return waitfor.analyze(programs, conditions), sum(len(p) for p in programs.values())


def _pairs(trace: Trace, conditions: waitfor.Conditions) -> list[dict[str, Any]]:
    """Rank pairs whose P2P ops run on more than one communicator under `conditions`."""
    comms: dict[tuple[int, int], dict[str, set[str]]] = {}
    for rank, rt in trace.ranks.items():
        groups = [waitfor.Group(tuple(sorted(g["ranks"])), str(g.get("desc") or ""))
                  for g in rt.groups]
        for u in rt.usage:
            if u.kind != "p2p" or u.peer is None or u.group < 0:
                continue
            coalesced = bool(u.batched)  # a batched op without a batch id: its window's batch
            op = waitfor.Op(rank, 0, u.api, groups[u.group], u.peer, coalesced=u.batched,
                            batch=0 if coalesced or u.in_batch else None)
            comm = waitfor.communicator_for(op, conditions, coalesced)
            pair = (min(rank, u.peer), max(rank, u.peer))
            how = "coalesced batch" if coalesced else "unbatched op"
            comms.setdefault(pair, {}).setdefault(comm.name, set()).add(
                f"{how} on {groups[u.group].label}")
    return [{"ranks": list(pair), "communicators": {c: sorted(h) for c, h in sorted(by.items())}}
            for pair, by in sorted(comms.items()) if len(by) > 1]


def _timeline(trace: Trace, model: waitfor.Analysis) -> dict[str, Any]:
    """The first ops of each rank in issue order (setup calls included), with what the trace
    and the wait-for model say about each: the picture of which rank waits where."""
    states = {r: {o.op.index: o for o in rs.ops} for r, rs in model.ranks.items()}
    creating = _creations(model)
    lanes = []
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
                "recorded": "pending" if end is None else
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


def _creations(model: waitfor.Analysis) -> dict[int, tuple[int, dict[str, Any]]]:
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


# --- findings ----------------------------------------------------------------------------------
def _ranks_words(ranks: list[int]) -> str:
    """`0-3, 8, 10-11`: rank lists as a person writes them."""
    ranks = sorted(set(ranks))
    parts, start = [], None
    for i, r in enumerate(ranks):
        if start is None:
            start = r
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            parts.append(str(start) if start == r else f"{start}-{r}")
            start = None
    return ", ".join(parts)


def _findings(uses: dict[Key, _Use], mapped: dict[Key, str], by_id: dict[str, dict[str, Any]],
              run: dict[str, Any], effective: dict[str, Any], trace: Trace) -> list[Finding]:
    out: list[Finding] = []
    inside = [m for m in run["misses"] if m["in_targets"]]
    outside = [m for m in run["misses"] if not m["in_targets"]]
    if inside:
        first = inside[0]
        out.append(Finding(
            "static-miss", "error",
            f"{len(inside)} line(s) of the scanned sources issued P2P ops the scan did not predict; "
            f"e.g. {first['path']}:{first['line']} {first['api']} in {first['function']}, "
            f"{first['calls']} call(s): {first['why']}. Do not trust the scan's 'unreachable' here.",
            fix="report it with this file attached (p2paudit report --format json); meanwhile "
                "treat every site of that function as reachable",
            site_ids=[m["site_id"] for m in inside if m["site_id"]],
            where=f"{first['path']}:{first['line']}",
            detail={"misses": inside[:50]}))
    if outside:
        first = outside[0]
        out.append(Finding(
            "unscanned-p2p", "warning",
            f"{len(outside)} line(s) outside the scanned sources issued P2P ops; e.g. "
            f"{first['path']}:{first['line']} {first['api']} in {first['function']}",
            fix="add the package or script they are in as a --target of the scan",
            where=f"{first['path']}:{first['line']}", detail={"misses": outside[:50]}))

    if effective.get("batch_p2p_comm") is True:
        for key, u in uses.items():
            for label, per_rank in u.unbatched.items():
                out.append(_unbatched_finding(key, u, label, per_rank, mapped, by_id, effective))

    if run["pairs"]:
        first = run["pairs"][0]
        comms = "; ".join(f"{c} ({', '.join(h)})" for c, h in first["communicators"].items())
        examples = ", ".join(f"{a}-{b}" for a, b in (p["ranks"] for p in run["pairs"][:EXAMPLES]))
        # What the recorded run used decides: a gloo recording replayed with --transport still
        # only says what NCCL *would* do.
        on_gloo = "nccl" not in (run["trace"].get("backends") or [])
        out.append(Finding(
            "pair-on-two-communicators", "warning" if on_gloo else "error",
            f"{len(run['pairs'])} pipeline neighbour pair(s) "
            f"{'would talk under NCCL' if on_gloo else 'talk'} over two or more NCCL "
            f"communicators ({run['waitfor']['conditions']['init']} init): ranks "
            f"{first['ranks'][0]} and {first['ranks'][1]} use {comms}. Each communicator is "
            "created at its first use by a rendezvous of all its members; ranks that reach the "
            f"creations in different orders wait on each other. Pairs: {examples}"
            + (" ..." if len(run["pairs"]) > EXAMPLES else ""),
            fix="send every P2P op between two pipeline stages over one group and one path "
                "(all batched on the pipeline group), or create the communicators eagerly "
                "(init_process_group(device_id=...))",
            detail={"pairs": run["pairs"][:50]}))

    pending = run["trace"]["pending"]
    if pending:
        stuck = sorted(int(r) for r in pending)
        out.append(Finding(
            "run-stopped-in-op", "error",
            f"{len(stuck)} rank(s) stopped inside a P2P or collective op that never completed "
            f"(ranks {_ranks_words(stuck)}); the timeline shows where each one was",
            fix="read the wait-for cycle and the timeline: the first op that differs between "
                "neighbours is the one to change",
            detail={"pending": pending}))
    return out


def _replay_findings(wf: dict[str, Any], deadlock: waitfor.Deadlock) -> list[Finding]:
    """What the wait-for replay adds, by what the run did.

    - `wait-for-cycle` (error): the run stopped in an op (or an op raised) and the replay finds
      the cycle of waits: the deadlock, explained.
    - `replay-would-hang` (warning): every op completed, yet under NCCL over the transport asked
      the same order hangs with these sizes (*will deadlock there*): a hang waiting for that
      setting, not one that happened.
    - `replay-can-hang` (warning): every op completed; the order deadlocks when no send is
      buffered (*can deadlock*), and whether the transport asked buffers these sizes is not known.
    - `replay-disagrees-with-run` (warning): every op of a gloo run completed, yet the gloo model
      says it hangs: the model is wrong about this run; nothing is concluded from it.
    - `p2p-mismatch` (error): a send and the receive it pairs with differ in size or dtype.
    """
    fix = ("make both sides of each exchange reach the same communicator and the same op order: "
           "batch the exchange (batch_isend_irecv that coalesces) or order sends and receives "
           "even/odd")
    out: list[Finding] = []
    if wf.get("mismatched_pairs"):
        out.append(_mismatch_finding(wf["mismatched_pairs"]))
    if not wf["run_completed"]:
        if wf["cycle"]:
            out.append(Finding(
                "wait-for-cycle", "error",
                f"the run stopped, and its recorded op order deadlocks under "
                f"{_conditions_words(wf['conditions'])}: {wf['cycle']}",
                fix=fix, detail={"blocked": wf["blocked"][:EXAMPLES]}))
        return out
    if wf["hang"] and wf["conditions"]["backend"] == "gloo":
        out.append(Finding(
            "replay-disagrees-with-run", "warning",
            f"every recorded op completed, yet the gloo model of the wait-for replay says this "
            f"order hangs ({wf['cycle'] or wf['blocked'][0]}): the model is wrong about this run, "
            "so its other answers are not to be trusted here",
            fix="report it with the trace attached", detail={"blocked": wf["blocked"][:EXAMPLES]}))
    if deadlock.will:
        out.append(_would_hang(wf["conditions"], deadlock, fix))
    elif deadlock.will is None and deadlock.can:
        out.append(Finding(
            "replay-can-hang", "warning",
            f"every recorded op completed; this order deadlocks when no send is buffered "
            f"({deadlock.cycle}), and whether NCCL over {deadlock.asked} buffers these sizes "
            f"is not known: " + "; ".join(f"{v.transport.name}: {v.why}"
                                         for v in deadlock.transports),
            fix=fix + f". What decides it: {deadlock.decide()}", where=deadlock.where,
            detail={"deadlock": deadlock.to_json()}))
    return out


def _mismatch_finding(pairs: list[dict[str, Any]]) -> Finding:
    """Sends and receives paired in FIFO order per communicator whose sizes or dtypes differ."""
    first = pairs[0]
    a, b = first["send"], first["recv"]

    def side(x: dict[str, Any]) -> str:
        role = f" {'to' if x['api'] in waitfor.SEND_APIS else 'from'} its {x['role']}" \
            if x.get("role") else ""
        return (f"rank {x['rank']}'s {x['api']}{role} of {waitfor.size_words(x['bytes'])}"
                f"{' ' + x['dtype'] if x['dtype'] else ''}"
                f"{' at ' + x['site'] if x['site'] else ''}")
    return Finding(
        "p2p-mismatch", "error",
        f"{len(pairs)} send/receive pair(s) disagree in {first['what']}: {side(a)} is received by "
        f"{side(b)} on {first['communicator']} (sends and receives between two ranks pair up in "
        "the order they are issued on a communicator: the receiver gets other bytes than were "
        "sent, silently, or the pair never completes)",
        fix="give both sides the same shape and dtype (a receive buffer reused across steps keeps "
            "its old dtype); where one batch sends to the same peer twice (PP=2 with a virtual "
            "pipeline), order each side's ops so they pair (send_prev with recv_next), or use "
            "overlap_p2p_comm=True",
        where=a["site"] or "", detail={"pairs": pairs[:EXAMPLES]})


def _would_hang(conditions: dict[str, Any], deadlock: waitfor.Deadlock, fix: str) -> Finding:
    where = " or ".join(v.transport.name for v in deadlock.transports)
    return Finding(
        "replay-would-hang", "warning",
        f"every recorded op completed; under NCCL over {where} this order would hang "
        f"({_conditions_words(conditions)}): {deadlock.cycle_here}; "
        + "; ".join(f"{v.transport.name}: {v.why}" for v in deadlock.transports),
        fix=fix, where=deadlock.where, detail={"conditions": conditions, "deadlock": deadlock.to_json()})


def _conditions_words(c: dict[str, Any]) -> str:
    if c.get("backend") == "gloo":
        return "gloo (no coalescing, no stream order, a send completes once its receive is issued)"
    batch = {True: "coalesces", False: "runs op by op", None: "as recorded"}[c["coalesce"]]
    return (f"NCCL, {c['init']} init, batch_isend_irecv {batch}, {c['transport']} transport, "
            f"sends up to {waitfor.size_words(c['buffer_bytes'])} complete unmatched")


def _unbatched_finding(key: Key, u: _Use, label: str, per_rank: Counter, mapped: dict[Key, str],
                       by_id: dict[str, dict[str, Any]], effective: dict[str, Any]) -> Finding:
    path, line, _, function, api, _ = key
    group = u.groups.get(label, {})
    size = group.get("size") or len(group.get("ranks") or [])
    sid = mapped.get(key)
    site = by_id.get(sid) if sid else None
    chain = " -> ".join(site["paths"][0]) if site and site.get("paths") else function
    ranks = sorted(per_rank)
    if u.via_batch:
        what = (f"batch_isend_irecv at {path}:{line} ({function}) issued its ops one by one, "
                f"{sum(per_rank.values())} unbatched op(s)")
        why = effective.get("torch_batch_coalesces")
        fix = ("make this run's batch_isend_irecv coalesce; `p2paudit doctor` on the cluster says "
               "whether its torch, backend and TORCH_DISTRIBUTED_DEBUG level do")
        if why is False:
            fix += " (the scan's config already says they do not: see torch_batch_coalesces)"
    else:
        what = f"{sum(per_rank.values())} unbatched {api} op(s) from {path}:{line} ({function})"
        fix = ("route this op through batch_isend_irecv on the pipeline group, or create the "
               "communicators eagerly (init_process_group(device_id=...)) so no 2-rank "
               "communicator is created lazily")
    return Finding(
        "unbatched-run", "error",
        f"{what} on {label} (size {size}) on {len(ranks)} rank(s) (ranks {_ranks_words(ranks)}) "
        f"although batch_p2p_comm=True; path: {chain}",
        fix=fix, site_ids=[sid] if sid else [], where=f"{path}:{line}",
        detail={"group": {"label": label, "size": size, "ranks": group.get("ranks")},
                "path": site["paths"][0] if site and site.get("paths") else [function],
                "ops": sum(per_rank.values()), "ranks": ranks})
