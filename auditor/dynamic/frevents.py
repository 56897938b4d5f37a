"""A dump's entries as trace events: one start per op, an end per op the dump says completed.

Each entry is read for what `p2paudit record` writes of an op (its kind, peer, group, tensor,
call site, the batch it belongs to) so that the trace reader, the join and the replay read a
Flight Recorder dump as they read a recorded run. The format is described in `flight_recorder`."""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from typing import Any

from auditor.dynamic.frdump import Dump
from auditor.dynamic.frgroups import DumpGroup, entry_group

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


def entry_kind(entry: dict[str, Any]) -> tuple[str, str, str]:
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
    return entry_kind(entry)[1] in P2P_TYPES


def _windows(entries: list[dict[str, Any]]) -> dict[int, int]:
    """Entry index -> index of the entry closing its coalescing window: the entries before a
    closer on its group that share its p2p (or collective) sequence number."""
    owner: dict[int, int] = {}
    # Per group, the entries since its last closer: a closer takes the run of them that ends
    # just before it, so each entry is looked at a bounded number of times (linear; walking
    # back over every other group's entries was quadratic: 32k entries took > 120 s).
    open_on: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        pg = entry_group(e)[0]
        since = open_on.setdefault(pg, [])
        if entry_kind(e)[1] not in CLOSERS:
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


def nanoseconds(value: Any) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def rank_events(d: Dump, groups: dict[tuple[int, str], DumpGroup], t0: int,
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
        backend, op, meta = entry_kind(e)
        if op in CLOSERS:
            continue
        name, desc = entry_group(e)
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
        created = nanoseconds(e.get("time_created_ns"))
        seq = len(starts) + 1
        lane = p2p_lane(d.rank, name, api, peer) if p2p else (name, d.rank)
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
            done = nanoseconds((closer or e).get("time_discovered_completed_ns"))
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


def p2p_lane(rank: int, group: str | None, api: str, peer: int | None) -> tuple:
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
