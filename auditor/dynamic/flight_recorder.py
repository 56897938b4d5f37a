"""PyTorch Flight Recorder dumps as a trace: the evidence a hung job already left behind.

torch keeps the last `TORCH_FR_BUFFER_SIZE` (`TORCH_NCCL_TRACE_BUFFER_SIZE`) ops of each process
and writes them, one file per rank, on a watchdog timeout (`TORCH_NCCL_DUMP_ON_TIMEOUT`) or on
request: a pickle by default, JSON on request. This reads a directory of them into the same
`Trace` as `p2paudit record` writes (one start event per op, an end event for each op the dump
says completed), so the join, the wait-for replay and every report read them unchanged.

The format (FlightRecorder.hpp, version "2.10" in torch 2.11-2.13; earlier 2.x have fewer keys,
and a key this reader needs but a dump lacks reads as unknown):
`{version, entries, pg_config, pg_status, comm_lib_version}`; each entry has `profiling_name`
(`nccl:send 0->1`, `nccl:recv 1<-0` in group-local ranks, `nccl:all_reduce`), `process_group`
(name, desc), `collective_seq_id`, `p2p_seq_id`, `op_id`, `record_id`, `input_sizes` /
`output_sizes` and dtypes, `state` (scheduled, started, completed), `retired`, the times in ns
and `frames` (pickle only; innermost first). `pg_config` maps a group name to its global ranks.

What a dump cannot hold, measured (tests/fr_dumps/README.md): an entry is written once the op is
handed to the backend, after its communicator exists, so an op blocked in lazy communicator
creation has none; gloo (torch 2.13) records collectives only, never updates `state` (its
`retired` is the completion) and fills no `pg_config`; the ring buffer keeps only the last ops.
Each of these is said in the trace's notes, and `findings` names the rank whose dump ends before
its peers' matching op. The files themselves are read (safely) in `frdump`, their groups'
members in `frgroups`, and their entries turned into trace events in `frevents`.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from auditor.dynamic.frdump import Dump, read_dumps
from auditor.dynamic.frevents import entry_kind, nanoseconds, p2p_lane, rank_events
from auditor.dynamic.frgroups import entry_group, groups_of
from auditor.dynamic.rankfile import (
    HEAD_OPS,
    RankTrace,
    inconsistent,
    keep_per_rank,
    rank_trace,
)
from auditor.dynamic.trace import Trace, evidence, gaps, span_words
from auditor.findings import Finding

NEWEST_KNOWN = (2, 10)
NO_ENTRY_BEFORE_COMM = (
    "a Flight Recorder entry is written when the op reaches the backend, after its communicator "
    "exists: an op blocked inside lazy communicator creation (NCCL's first use of a group or a "
    "rank pair) has no entry, so a rank stuck there looks like a rank whose dump just ends")


def _where_each_group_stopped(rank: int, events: list[dict[str, Any]]) -> list[str]:
    """Per group with pending ops: its last completed op and the ones after it, with their states:
    what a hang analysis of Flight Recorder dumps starts from."""
    ended = {e["of"] for e in events if e["phase"] == "end"}
    by_group: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e["phase"] == "start":
            by_group.setdefault(e["group"]["desc"] or e["group"]["name"], []).append(e)
    out = []
    for label, ops in sorted(by_group.items()):
        pending = [e for e in ops if e["seq"] not in ended]
        if not pending:
            continue
        done = [e for e in ops if e["seq"] in ended]
        last = (f"last completed {_op_words(done[-1])}" if done else "nothing completed")
        out.append(f"rank {rank}, group {label}: {last}; then {len(pending)} pending: "
                   + ", ".join(_op_words(e) for e in pending[:4]) + (" ..." if len(pending) > 4 else ""))
    return out


def _op_words(e: dict[str, Any]) -> str:
    peer = f" {'to' if 'send' in e['api'] else 'from'} {e['peer']}" if e["peer"] is not None else ""
    fr = e["fr"]
    retired = ", retired" if fr["retired"] and fr["state"] != "completed" else ""
    return f"{e['api'].upper()}{peer} (record {fr['record_id']}, {fr['state']}{retired})"


def _gaps(d: Dump) -> list[str]:
    """Ops a group enqueued that left no entry (`op_id` counts every op of a group). In one pass,
    as spans: an op id of 10^12 claims no list of that length."""
    if not d.entries or d.entries[0].get("record_id") not in (0, None):
        return []
    by_group: dict[str, set[int]] = {}
    descs: dict[str, str] = {}
    for e in d.entries:
        if isinstance(e.get("op_id"), int):
            name, desc = entry_group(e)
            by_group.setdefault(name, set()).add(e["op_id"])
            descs.setdefault(name, desc)
    out = []
    for name, ids in sorted(by_group.items()):
        lost = [(max(a, 1), b) for a, b in gaps(sorted(ids), max(ids) + 1) if b >= 1]
        if lost:
            out.append(f"rank {d.rank}: group {name} ({descs[name]}) enqueued "
                       f"{sum(b - a + 1 for a, b in lost)} op(s) with no entry (op ids "
                       f"{span_words(lost)}); gloo records no P2P op (send, recv, isend, irecv, "
                       "batch_isend_irecv), so these are most likely its P2P ops")
    return out


def read_flight_recorder(path: str | os.PathLike[str], sites: list[dict[str, Any]] | None = None,
                         head_ops: int = HEAD_OPS) -> Trace:
    """A directory of Flight Recorder dumps as a `Trace`, each rank's events read by the trace
    reader's `rank_trace` as a recorded file's are; what the dumps cannot say is in its `skipped`
    notes, each starting with "flight recorder:". `sites`: the scan's, whose qualified function
    names replace the frames' code names at their lines. `head_ops`: as `read_trace_dir`'s."""
    dumps, notes = read_dumps(path)
    functions: dict[tuple[str, int], list[str]] = {}
    for s in sites or ():
        functions.setdefault((s["path"], s["line"]), []).append(s["function"])
    groups = groups_of(dumps, notes)
    times = [e["time_created_ns"] for d in dumps for e in d.entries
             if nanoseconds(e.get("time_created_ns"))]
    t0 = min(times) if times else 0
    backends = sorted({entry_kind(e)[0] for d in dumps for e in d.entries if entry_kind(e)[0]})
    limits = [NO_ENTRY_BEFORE_COMM,
              "a dump does not say whether communicators were created eagerly "
              "(init_process_group(device_id=...)): the replay assumes lazy creation "
              "(`report --init eager` replays the other)"]
    if "gloo" in backends:
        limits.append("gloo entries: gloo (torch 2.13) records collectives only and never "
                      "updates 'state'; an entry counts as completed once retired, and a work "
                      "retires a moment after it finishes, so the newest entries may read as pending")
    if any(not any(e.get("frames") for e in d.entries) for d in dumps if d.entries):
        limits.append("dumps without frames (JSON dumps carry none): their ops are not placed at "
                      "a line of code; the pickle dump (the default) has them")
    for d in dumps:
        limits += _gaps(d)
        first = d.entries[0].get("record_id") if d.entries else None
        if isinstance(first, int) and first > 0:
            limits.append(f"rank {d.rank}: the ring buffer kept the last {len(d.entries)} ops only "
                          f"(the first is record {first}): earlier ops are lost, and ranks are "
                          "matched op by op from where each buffer starts")
        major, minor = (int(x) for x in d.version.split(".")[:2])
        if (major, minor) > NEWEST_KNOWN:
            limits.append(f"{d.path.name}: dump version {d.version} is newer than the 2.10 this "
                          "reader was checked against; keys it does not know are ignored")
    said = [len(g.ranks) for g in groups.values() if g.known and g.desc == "default_pg"]
    world = max(said + [max(d.rank for d in dumps) + 1])
    if said and world > max(said):
        far = max(dumps, key=lambda d: d.rank)
        raise inconsistent(far.path, f"a dump of rank {far.rank}, outside the world of "
                                     f"{max(said)} ranks its default group's pg_config names")
    ranks: dict[int, RankTrace] = {}
    keep = keep_per_rank(len(dumps), head_ops)
    stopped: list[str] = []
    for d in dumps:
        meta = {"phase": "meta", "source": "flight-recorder", "dump": d.path.name, "rank": d.rank,
                "fr_version": d.version, "comm_lib_version": d.comm_lib_version,
                "pg_status": d.pg_status, "world_size": world, "wall0": t0 / 1e9}
        events = rank_events(d, groups, t0, notes, functions)
        stopped += _where_each_group_stopped(d.rank, events)
        rt = ranks[d.rank] = rank_trace(d.rank, d.path, ((None, e) for e in [meta, *events]), keep)
        stopped += rt.notes
    notes += stopped
    silent = {r: "its dump holds no entry" for r, rt in ranks.items() if not rt.lines}
    said_of: list[str] = []
    trace = evidence(Path(path), ranks, world, {}, said_of, silent,
                     "no dump (its process never dumped, or its file is elsewhere)")
    trace.skipped = [f"flight recorder: {n}" for n in notes + said_of + limits]
    return trace


# --- what the dumps say about a hang --------------------------------------------------------------
def findings(trace: Trace) -> list[Finding]:
    """For every op still pending in a dump, the peer (or group member) whose dump ends before the
    op that would match it: the rank to look at first. From each rank's op counts and pending
    ops, so it holds for dumps longer than the trace's head window."""
    lanes: Counter = Counter()  # (group name, src, dst, is a send) -> ops
    colls: Counter = Counter()  # (group name, rank) -> collectives
    for rank, rt in trace.ranks.items():
        for use, n in rt.usage.items():
            name = rt.groups[use.group].get("name") if use.group >= 0 else None
            if use.kind == "p2p" and use.peer is not None:
                lanes[p2p_lane(rank, name, use.api, use.peer)] += n
            elif use.kind == "collective":
                colls[(name, rank)] += n
    p2p: dict[tuple, Finding] = {}
    coll: dict[tuple, Finding | None] = {}
    for rank, rt in trace.ranks.items():
        for e in rt.open_ops:  # in issue order
            name = (e.get("group") or {}).get("name")
            k = e["fr"]["lane_index"]
            if e["kind"] == "p2p" and e.get("peer") is not None:
                lane = p2p_lane(rank, name, e["api"], e["peer"])
                name, src, dst, send = lane
                theirs = lanes[(name, src, dst, not send)]
                if lane in p2p or k < theirs:
                    continue
                other = dst if send else src
                p2p[lane] = _gap_finding(trace, rank, other, e, f"{'SEND to' if send else 'RECV from'} "
                                         f"{other} #{k + 1} on group {name}",
                                         "RECV" if send else "SEND", theirs)
            elif e["kind"] == "collective" and (name, rank) not in coll:
                coll[(name, rank)] = next(
                    (_gap_finding(trace, rank, member, e, f"{e['api'].upper()} #{k + 1} on group {name}",
                                  e["api"].upper(), colls[(name, member)])
                     for member in e["group"]["ranks"]
                     if member != rank and colls[(name, member)] <= k), None)
    return ([f for _, f in sorted(p2p.items(), key=lambda kv: str(kv[0]))]
            + [f for _, f in sorted(coll.items(), key=lambda kv: str(kv[0])) if f is not None])


def _gap_finding(trace: Trace, rank: int, other: int, e: dict[str, Any], what: str,
                 wanted: str, theirs: int) -> Finding:
    site = e.get("site") or {}
    where = f"{site.get('path')}:{site.get('line')}" if site else ""
    if trace.lacks(other):
        why = f"rank {other} left no dump"
    else:
        why = (f"rank {other}'s dump ends after {theirs} such op(s): rank {other} never issued "
               f"the matching {wanted}, or it is blocked before that op gets an entry (inside "
               "lazy communicator creation, or in code before the call), or its ring buffer "
               "lost it")
    return Finding(
        "flight-recorder-unmatched", "error",
        f"rank {rank}'s {what} ({e['fr']['profiling_name']}, record {e['fr']['record_id']}, "
        f"state {e['fr']['state']}) is pending and has no match: {why}",
        fix=f"look at rank {other} first: its py-spy stack (or `p2paudit record` hang file) shows "
            "where it is; a rank inside ncclCommInitRank points to a communicator created lazily "
            "in a different order on the two ranks",
        where=where, detail={"rank": rank, "peer": other, "fr": e["fr"]})
