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
its peers' matching op. The files themselves are read (safely) in `frdump`.
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.dynamic.frdump import Dump, read_dumps
from auditor.dynamic.rankfile import (
    HEAD_OPS,
    RankTrace,
    inconsistent,
    keep_per_rank,
    rank_trace,
)
from auditor.dynamic.trace import Trace, evidence, gaps, span_words
from auditor.findings import Finding

# Entries that close a coalescing window: the window's ops precede them with the same seq id
# (torch/distributed/flight_recorder/components/utils.py, find_coalesced_group*).
CLOSERS = frozenset({"coalesced", "ALLGATHER_coalesced", "REDUCE_SCATTER_coalesced"})
P2P_TYPES = {"send": "->", "recv": "<-"}
TORCH_P2P_APIS = ("isend", "irecv", "send", "recv")
# c10::toString(ScalarType) -> (torch dtype name, bytes per element)
DTYPES = {
    "Float": ("float32", 4), "Double": ("float64", 8), "Half": ("float16", 2),
    "BFloat16": ("bfloat16", 2), "Long": ("int64", 8), "Int": ("int32", 4), "Short": ("int16", 2),
    "Char": ("int8", 1), "Byte": ("uint8", 1), "Bool": ("bool", 1),
    "Float8_e4m3fn": ("float8_e4m3fn", 1), "Float8_e5m2": ("float8_e5m2", 1),
    "ComplexFloat": ("complex64", 8),
}
# Frames that are never a site: torch itself and the wrappers around its API.
NOT_A_SITE = re.compile(r"(^|/)(torch/|contextlib\.py$|typing_extensions\.py$|warnings\.py$)")
NEWEST_KNOWN = (2, 10)
NO_ENTRY_BEFORE_COMM = (
    "a Flight Recorder entry is written when the op reaches the backend, after its communicator "
    "exists: an op blocked inside lazy communicator creation (NCCL's first use of a group or a "
    "rank pair) has no entry, so a rank stuck there looks like a rank whose dump just ends")


# --- groups -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Group:
    name: str
    desc: str
    ranks: tuple[int, ...]
    known: bool  # from pg_config, not inferred

    def to_json(self, backend: str) -> dict[str, Any]:
        return {"ranks": list(self.ranks), "size": len(self.ranks), "desc": self.desc,
                "name": self.name, "backend": backend}


def _groups(dumps: list[Dump], notes: list[str]) -> dict[tuple[int, str], _Group]:
    """(rank, group name) -> the group, from each rank's pg_config; where a backend wrote none
    (gloo), the default group is every dumped rank and another group the dumped ranks that name it
    in an entry or in their `pg_status` (which lists every group a rank enqueued work on)."""
    out: dict[tuple[int, str], _Group] = {}
    for d in dumps:
        for key, info in d.pg_config.items():
            if not isinstance(info, dict) or not str(info.get("name", key)):
                continue
            ranks = _ranks(info.get("ranks"))
            if ranks is None:
                notes.append(f"{d.path.name}: pg_config of group {key!r} has no readable rank list")
                continue
            name = str(info.get("name", key))
            out[(d.rank, name)] = _Group(name, str(info.get("desc", "")), ranks, True)
    users: dict[str, set[int]] = {}
    descs: dict[str, str] = {}
    for d in dumps:
        for e in d.entries:
            name, desc = _pg(e)
            users.setdefault(name, set()).add(d.rank)
            descs[name] = desc
    for d in dumps:
        for name in d.pg_status:
            if str(name) in users:
                users[str(name)].add(d.rank)
    dumped = tuple(d.rank for d in dumps)
    for name, users_of in sorted(users.items()):
        missing = [r for r in users_of if (r, name) not in out]
        if not missing:
            continue
        if descs[name] == "default_pg":
            members, how = dumped, "every dumped rank"
        else:
            members, how = tuple(sorted(users_of)), "the dumped ranks whose entries or pg_status name it"
        notes.append(f"group {name} ({descs[name] or 'no description'}): no pg_config entry "
                     f"(gloo writes none); its members are taken as {how}: "
                     f"{', '.join(map(str, members))}")
        for r in missing:
            out[(r, name)] = _Group(name, descs[name], members, False)
    return out


def _ranks(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, RecursionError, MemoryError):  # "[[[[..." nested deep
            return None
    if isinstance(value, (list, tuple)) and all(isinstance(r, int) for r in value):
        return tuple(sorted(value))
    return None


def _pg(entry: dict[str, Any]) -> tuple[str, str]:
    pg = entry.get("process_group")
    if isinstance(pg, (list, tuple)) and len(pg) == 2:
        return str(pg[0]), str(pg[1])
    return str(entry.get("pg_id", "?")), ""


# --- entries to events --------------------------------------------------------------------------
def _kind(entry: dict[str, Any]) -> tuple[str, str, str]:
    """(backend, op type, the text after the type) of `nccl:send 0->1`."""
    backend, _, rest = str(entry.get("profiling_name", "")).partition(":")
    op, _, meta = rest.partition(" ")
    return backend, op, meta


def _seq(entry: dict[str, Any], p2p: bool) -> Any:
    if p2p:
        return entry.get("p2p_seq_id")
    return entry.get("collective_seq_id")


def _is_p2p(entry: dict[str, Any]) -> bool:
    if isinstance(entry.get("is_p2p"), bool):
        return entry["is_p2p"]
    return _kind(entry)[1] in P2P_TYPES


def _windows(entries: list[dict[str, Any]]) -> dict[int, int]:
    """Entry index -> index of the entry closing its coalescing window: the entries before a
    closer on its group that share its p2p (or collective) sequence number."""
    owner: dict[int, int] = {}
    # Per group, the entries since its last closer: a closer takes the run of them that ends
    # just before it, so each entry is looked at a bounded number of times (linear; walking
    # back over every other group's entries was quadratic: 32k entries took > 120 s).
    open_on: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        pg = _pg(e)[0]
        since = open_on.setdefault(pg, [])
        if _kind(e)[1] not in CLOSERS:
            since.append(i)
            continue
        for j in reversed(since):
            prev = entries[j]
            p2p = _is_p2p(prev)
            if _seq(prev, p2p) != _seq(e, p2p):
                break
            owner[j] = i
        since.clear()
    return owner


def _site(frames: Any) -> dict[str, Any] | None:
    """The first frame outside torch, named as the scan names sites: the path below the
    site-packages directory it was imported from (a script: its file name)."""
    if not isinstance(frames, list):
        return None
    for f in frames:
        if not isinstance(f, dict):
            continue
        filename = str(f.get("filename", "")).replace(os.sep, "/")
        if NOT_A_SITE.search(filename):
            continue
        for marker in ("/site-packages/", "/dist-packages/"):
            if marker in filename:
                filename = filename.rsplit(marker, 1)[1]
                break
        else:
            filename = filename.rsplit("/", 1)[-1]
        line = f.get("line") if isinstance(f.get("line"), int) else 0
        return {"path": filename, "line": line, "end_line": line, "function": str(f.get("name", "?"))}
    return None


def _torch_frames(frames: Any) -> list[str]:
    if not isinstance(frames, list):
        return []
    return [str(f.get("name")) for f in frames
            if isinstance(f, dict) and NOT_A_SITE.search(str(f.get("filename", "")).replace(os.sep, "/"))]


def _tensor(entry: dict[str, Any], output: bool) -> tuple[list[int] | None, str | None, int | None]:
    sizes = entry.get("output_sizes" if output else "input_sizes") or []
    dtypes = entry.get("output_dtypes" if output else "input_dtypes") or []
    if not sizes or not isinstance(sizes[0], (list, tuple)):
        return None, None, None
    shape = [int(d) for d in sizes[0]]
    raw = dtypes[0] if isinstance(dtypes, (list, tuple)) and dtypes else None
    name, width = DTYPES.get(str(raw), (str(raw) if raw else None, None))
    nbytes = sum(math.prod(int(d) for d in s) for s in sizes) * width if width else None
    return shape, name, nbytes


def _outcome(entry: dict[str, Any], backend: str) -> tuple[str, str | None]:
    """done | pending | error, and the error. gloo never updates `state`; it marks an entry
    retired when its work finishes (measured, tests/fr_dumps). NCCL's watchdog retires an entry
    it gave up on without completing it: a timeout or an abort."""
    state, retired = entry.get("state"), entry.get("retired")
    if state == "completed":
        return "done", None
    if backend == "gloo":
        return ("done", None) if retired else ("pending", None)
    if retired:
        return "error", f"retired in state {state!r} without completing (timed out or aborted)"
    return "pending", None


def _ns(value: Any) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def _rank_events(d: Dump, groups: dict[tuple[int, str], _Group], t0: int,
                 notes: list[str], functions: dict[tuple[str, int], list[str]]
                 ) -> list[dict[str, Any]]:
    """The dump's entries as trace lines: a start per op (its place on its lane in `fr`), then an
    end per op the dump says completed."""
    entries = sorted(d.entries, key=lambda e: e.get("record_id", 0) if isinstance(
        e.get("record_id"), int) else 0)
    owner = _windows(entries)
    starts: list[dict[str, Any]] = []
    ends: list[dict[str, Any]] = []
    unplaced: Counter = Counter()
    calls = _BatchCalls()
    on_lane: Counter = Counter()
    for i, e in enumerate(entries):
        backend, op, meta = _kind(e)
        if op in CLOSERS:
            continue
        name, desc = _pg(e)
        group = groups.get((d.rank, name))
        if group is None:
            unplaced[name] += 1
            continue
        closer = entries[owner[i]] if i in owner else None
        status, error = _outcome(closer or e, backend)
        p2p = op in P2P_TYPES
        peer = None
        if p2p:
            local = meta.split(P2P_TYPES[op])
            if len(local) == 2 and local[1].strip().isdigit() and int(local[1]) < len(group.ranks):
                peer = group.ranks[int(local[1])]
            else:
                notes.append(f"{d.path.name}: record {e.get('record_id')} ({e.get('profiling_name')}) "
                             f"names no peer inside group {name} {list(group.ranks)}")
        torch_calls = _torch_frames(e.get("frames"))
        api = next((f for f in torch_calls if f in TORCH_P2P_APIS), op) if p2p else op
        shape, dtype, nbytes = _tensor(e, output=(op == "recv"))
        created = _ns(e.get("time_created_ns"))
        seq = len(starts) + 1
        lane = _lane(d.rank, name, api, peer) if p2p else (name, d.rank)
        site = _site(e.get("frames"))
        if site is not None:
            site["function"] = _scanned_name(site, functions)
        start: dict[str, Any] = {
            "seq": seq, "t": (created - t0) / 1e9 if created else None, "rank": d.rank,
            "api": api, "phase": "start", "kind": "p2p" if p2p else "collective",
            "site": site, "peer": peer, "group": group.to_json(backend),
            "shape": shape, "dtype": dtype, "bytes": nbytes,
            "batched": True if closer is not None and p2p else (False if p2p else None),
            "batch": (closer or {}).get("record_id") if closer is not None else
                     calls.batch(e, api, peer) if "batch_isend_irecv" in torch_calls else None,
            "via": "batch_isend_irecv" if "batch_isend_irecv" in torch_calls else None,
            "op_site": None, "comm_init": None, "error": None,
            "fr": {"record_id": e.get("record_id"), "profiling_name": e.get("profiling_name"),
                   "collective_seq_id": e.get("collective_seq_id"), "p2p_seq_id": e.get("p2p_seq_id"),
                   "op_id": e.get("op_id"), "state": (closer or e).get("state"),
                   "retired": (closer or e).get("retired"), "lane_index": on_lane[lane]},
        }
        on_lane[lane] += 1
        starts.append(start)
        if status != "pending":
            done = _ns((closer or e).get("time_discovered_completed_ns"))
            end = {"phase": "end", "of": seq, "rank": d.rank, "api": api,
                   "t": (done - t0) / 1e9 if done else None,
                   "how": "raise" if status == "error" else "polled", "error": error}
            ends.append(end)
    for name, n in sorted(unplaced.items()):
        notes.append(f"{d.path.name}: {n} entr(y/ies) on group {name}, which no pg_config places")
    # The dump says which ops completed, not whether the rank's CPU waited for them before its
    # next op: end events follow every start, so the replay infers no such waits.
    ends.sort(key=lambda e: e["t"] if e["t"] is not None else math.inf)
    return starts + ends


def _lane(rank: int, group: str | None, api: str, peer: int | None) -> tuple:
    """Where a P2P op is matched in order: (group, source, destination, is a send)."""
    send = "send" in api
    return (group, rank, peer, send) if send else (group, peer, rank, send)


def _scanned_name(site: dict[str, Any], functions: dict[tuple[str, int], list[str]]) -> str:
    """Frames name a function by its code name (`_communicate`); the scan by its qualified name
    (`P2PCommunicator._communicate`). Where a scanned site sits at the frame's line, its name,
    so the join matches the entry to that site."""
    for function in functions.get((site["path"], site["line"]), ()):
        if function == site["function"] or function.endswith("." + site["function"]):
            return function
    return site["function"]


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


class _BatchCalls:
    """Which batch_isend_irecv call an op that ran outside a coalescing window came from (torch
    2.10 with DETAIL runs the batch op by op and records no window): consecutive ops with the same
    stack, a new call where an op to the same peer in the same direction comes again (a batch
    holds at most one per peer and direction)."""

    def __init__(self) -> None:
        self.frames: Any = None
        self.seen: set[tuple[str, Any]] = set()
        self.id: str | None = None

    def batch(self, entry: dict[str, Any], api: str, peer: Any) -> str:
        frames = entry.get("frames") or []
        names = [f.get("name") if isinstance(f, dict) else None for f in frames]
        frames = frames[names.index("batch_isend_irecv"):]  # the call's stack, without isend/irecv
        if frames != self.frames or (api, peer) in self.seen or self.id is None:
            self.frames, self.seen, self.id = frames, set(), f"call@{entry.get('record_id')}"
        self.seen.add((api, peer))
        return self.id


def _gaps(d: Dump) -> list[str]:
    """Ops a group enqueued that left no entry (`op_id` counts every op of a group). In one pass,
    as spans: an op id of 10^12 claims no list of that length."""
    if not d.entries or d.entries[0].get("record_id") not in (0, None):
        return []
    by_group: dict[str, set[int]] = {}
    descs: dict[str, str] = {}
    for e in d.entries:
        if isinstance(e.get("op_id"), int):
            name, desc = _pg(e)
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
    groups = _groups(dumps, notes)
    times = [e["time_created_ns"] for d in dumps for e in d.entries
             if _ns(e.get("time_created_ns"))]
    t0 = min(times) if times else 0
    backends = sorted({_kind(e)[0] for d in dumps for e in d.entries if _kind(e)[0]})
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
        events = _rank_events(d, groups, t0, notes, functions)
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
                lanes[_lane(rank, name, use.api, use.peer)] += n
            elif use.kind == "collective":
                colls[(name, rank)] += n
    p2p: dict[tuple, Finding] = {}
    coll: dict[tuple, Finding | None] = {}
    for rank, rt in trace.ranks.items():
        for e in rt.open_ops:  # in issue order
            name = (e.get("group") or {}).get("name")
            k = e["fr"]["lane_index"]
            if e["kind"] == "p2p" and e.get("peer") is not None:
                lane = _lane(rank, name, e["api"], e["peer"])
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
