"""The trace directory: one JSONL file per rank plus hang files; where they go and how to read them.

This is the one reader the rest of p2paudit uses (the join, the wait-for analysis). It is built for
traces of jobs that died: a SIGKILL can cut a rank's last line, a rank may never have written, a
restarted rank may have written twice. It reads what is there and says what it skipped. A trace
that contradicts itself (a peer outside the world, files of two runs, a file holding another
rank, a line that is not a trace line) is refused with the file and line: an analysis of it
would be a fake answer.

It is also built for cluster traces (1,024 ranks x 20k events): each rank file is streamed once,
by parallel worker processes when the trace is large, into a `RankTrace` that keeps aggregates
and the windows that matter, never every event: the op counts per (what, where, group, peer)
(`usage`), the file's first lines (`head`: what the timeline and the wait-for replay read), and
the ops that never ended (`open_ops`). Groups are interned once per file (`groups`).

Lines, one JSON object each, written one at a time into a shared memory
map of the file (a killed process leaves zeros after its last line, which the reader skips):
- the first line of a file: `phase: "meta"` (pid, host, versions, argv, and the clocks: `t` of
  every line is seconds since `mono0`, this process's time.monotonic() when recording started,
  which was `wall0` in time.time());
- `phase: "group"`: a process group, once per process before its first op (`group`: ranks, size,
  desc, name, backend, eager); op lines then give the group's name as their `group` (traces of
  earlier recorders repeat the whole group in every op line: read the same way);
- `phase: "start"`: an op, written before it is handed to torch. `kind` is "p2p", "collective" or
  "setup" (init_process_group, new_group: no peer, group, shape). Keys a line leaves out are
  filled with None by the reader: `batched`, `peer`, `group`, `shape`, `dtype`, and the optional
  `via` ("batch_isend_irecv"), `batch` (ordinal of the batch or coalescing window in this
  process), `op_site` (where the P2POp was built), `comm_init` (`{"kind": "pair", "key": "0:1"}`
  or `{"kind": "group", "key": "all"}`: the op that creates a communicator under NCCL's lazy
  init), `error`;
- `phase: "end"`: `of` is the start's seq; `how` is "return" (the call returned), "wait" (its Work
  was waited on), "polled" (its Work reported completion), "dropped" (its Work was freed unwaited)
  or "raise" (`error` names the exception);
- `phase: "off"`: the recorder hit an internal error and stopped recording in this process.
The line's contract: docs/schema/trace-line.schema.json (docs/design.md).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path
from typing import Any, NamedTuple

from auditor.errors import InputError

RANK_FILE = re.compile(r"^rank-(\d+)(?:\.(\d+))?\.jsonl$")
HANG_FILE = re.compile(r"^hang-rank-(\d+)\.json$")
OPTIONAL = ("batched", "peer", "group", "shape", "dtype", "via", "batch", "op_site",
            "comm_init", "error")
OP_KINDS = ("p2p", "collective")
KINDS = ("p2p", "collective", "setup")
# Ops kept in full per trace (`head`), spread over the ranks, and at least this many per rank:
# the timeline draws 16 per rank, the wait-for replay reads up to 32,768 in all.
HEAD_OPS = 32_768
HEAD_PER_RANK = 32
# A trace this large (bytes of rank files) is read by worker processes, one file at a time each.
PARALLEL_BYTES = 32 << 20

Site = tuple  # (path, line, end_line, function), as the recorder names a line of code


class Use(NamedTuple):
    """What a run of ops had in common; `RankTrace.usage` counts ops per Use."""

    kind: str  # p2p | collective
    api: str
    site: Site | None
    op_site: Site | None  # where the P2POp of a batched op was built
    group: int  # index into RankTrace.groups; -1: none recorded
    batched: bool | None  # a coalescing window ran around it
    via: str | None  # "batch_isend_irecv" for ops a batch issued
    peer: int | None
    in_batch: bool  # it carries a batch id (batch_isend_irecv call or coalescing window)


def rank_file(directory: Path, rank: int, pid: int) -> tuple[int, Path]:
    """Create this process's trace file: `rank-N.jsonl`, or `rank-N.PID.jsonl` if a previous
    process of the same rank (a restart) already wrote one. Returns a read-write descriptor (the
    recorder maps it)."""
    directory.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
    for name in (f"rank-{rank}.jsonl", f"rank-{rank}.{pid}.jsonl"):
        path = directory / name
        try:
            return os.open(path, flags, 0o644), path
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory}/rank-{rank}.{pid}.jsonl")


def hang_file(directory: Path, rank: int) -> Path:
    return directory / f"hang-rank-{rank}.json"


@dataclass
class RankTrace:
    """One process's trace, as aggregates and windows.

    `head`: the lines after the meta line in file order, up to the `keep`-th op (all of them when
    `complete`); each start event in it carries `end`: its end event, or None while it was pending
    when the file ends. `open_ops`: every start event (of any kind) without an end line.
    """

    rank: int
    path: Path
    meta: dict[str, Any]
    head: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True
    open_ops: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    usage: Counter = field(default_factory=Counter)  # Use -> ops
    batch_calls: Counter = field(default_factory=Counter)  # site -> batch_isend_irecv calls
    lines: int = 0  # lines after the meta line
    raised: list[dict[str, Any]] = field(default_factory=list)  # end lines with how "raise"
    world_sizes: set[int] = field(default_factory=set)  # what the meta and init lines say
    highest: tuple[int, int] = (-1, 0)  # (largest rank a peer or group names, its line)
    notes: list[str] = field(default_factory=list)
    hang: dict[str, Any] | None = None

    @property
    def ops(self) -> int:
        """P2P ops and collectives, all of them (not only the head's)."""
        return sum(self.usage.values())

    def starts(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Start events of the head, optionally of one kind ("p2p", "collective", "setup")."""
        return [e for e in self.head
                if e.get("phase") == "start" and (kind is None or e.get("kind") == kind)]

    def pending(self) -> list[dict[str, Any]]:
        """Ops that never ended in this file: in flight when the process stopped writing."""
        return self.open_ops


@dataclass
class Trace:
    root: Path
    ranks: dict[int, RankTrace]
    world_size: int | None
    missing: list[int]  # ranks below world_size with no trace file
    earlier: dict[int, list[RankTrace]]  # older processes of a rank (restarts), oldest first
    skipped: list[str]  # "rank-3.jsonl:57: truncated last line (cut by a kill?)", ...

    def init_mode(self) -> str | None:
        """How the run created its communicators, as its groups recorded it: "eager" where
        init_process_group bound a device (device_id), "lazy" where none did; None where no group
        says, or the groups disagree. The one reader of it (the join, the wait-for replay)."""
        modes = {g["eager"] for rt in self.ranks.values() for g in rt.groups
                 if isinstance(g.get("eager"), bool)}
        return ("eager" if modes.pop() else "lazy") if len(modes) == 1 else None


def read_trace_dir(path: str | os.PathLike[str], head_ops: int = HEAD_OPS,
                   jobs: int | None = None) -> Trace:
    """Read every rank file and hang file under `path`. InputError when there is no trace, or
    when it contradicts itself. `jobs`: worker processes (default: the cores, for large traces)."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(str(root), "no such trace directory")
    files = [(f, int(m.group(1))) for f in sorted(root.iterdir())
             if (m := RANK_FILE.match(f.name)) and f.is_file()]
    if not files:
        raise InputError(str(root), "no rank-N.jsonl trace files (was the run recorded?)")
    keep = keep_per_rank(len(files), head_ops)
    skipped: list[str] = []
    by_rank: dict[int, list[RankTrace]] = {}
    for rank_trace in _read_all(files, keep, jobs):
        skipped += rank_trace.notes
        if rank_trace.meta or rank_trace.lines:
            by_rank.setdefault(rank_trace.rank, []).append(rank_trace)
        else:
            skipped.append(f"{rank_trace.path.name}: empty trace file")
    if not by_rank:
        raise InputError(str(root), "no rank-N.jsonl trace file holds a trace line")
    ranks: dict[int, RankTrace] = {}
    earlier: dict[int, list[RankTrace]] = {}
    for rank, traces in by_rank.items():
        traces.sort(key=lambda t: (t.meta.get("wall0") or 0.0, t.path.name))
        ranks[rank] = traces[-1]
        if len(traces) > 1:
            earlier[rank] = traces[:-1]
            names = ", ".join(t.path.name for t in traces[:-1])
            skipped.append(f"rank {rank}: earlier process(es) {names} kept apart; "
                           f"{traces[-1].path.name} is the latest")
    for file in sorted(root.glob("hang-rank-*.json")):
        match = HANG_FILE.match(file.name)
        if not match:
            continue
        try:
            report = json.loads(file.read_text(encoding="utf-8"))
            if not isinstance(report, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            skipped.append(f"{file.name}: unreadable hang file ({exc})")
            continue
        rank = int(match.group(1))
        if rank in ranks:
            ranks[rank].hang = report
        else:
            skipped.append(f"{file.name}: hang file of rank {rank}, which has no trace file")
    world_size = _world_size(root, ranks)
    missing = sorted(set(range(world_size)) - set(ranks)) if world_size else []
    for rank in missing:
        skipped.append(f"rank {rank}: no trace file (the process never initialised, or "
                       f"wrote to another node's directory)")
    return Trace(root, dict(sorted(ranks.items())), world_size, missing, earlier, skipped)


def read_meta_lines(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The first (meta) line of every rank file: who wrote it (host, pid), without reading the
    events. The launcher's SIGUSR1 handler needs only this, at the moment a rank is stuck."""
    metas = []
    for file in sorted(Path(path).glob("rank-*.jsonl")):
        if not RANK_FILE.match(file.name):
            continue
        try:
            with file.open("rb") as f:
                meta = json.loads(f.readline())
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and meta.get("phase") == "meta":
            metas.append(meta)
    return metas


def inconsistent(subject: Path, cause: str, line: int | None = None) -> InputError:
    """Exit 2, naming the file (and line) and what contradicts what."""
    return InputError(str(subject), f"the trace is inconsistent: {cause}", line)


# --- reading one file ---------------------------------------------------------------------------

def _read_all(files: list[tuple[Path, int]], keep: int, jobs: int | None) -> list[RankTrace]:
    size = 0
    for file, _ in files:
        try:
            size += file.stat().st_size
        except OSError:
            pass
    workers = min(jobs or os.cpu_count() or 1, len(files))
    if workers < 2 or (jobs is None and size < PARALLEL_BYTES):
        return [_read_rank_file(file, rank, keep) for file, rank in files]
    out = []
    # fork: the workers need nothing of the parent but this module, and spawn would re-run the
    # caller's __main__ (impossible for `python -` or a notebook).
    context = get_context("fork" if "fork" in get_all_start_methods() else "spawn")
    try:
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            chunk = max(1, len(files) // (workers * 8))
            for result in pool.map(_read_in_worker, files, [keep] * len(files), chunksize=chunk):
                if isinstance(result, tuple):  # an InputError, sent back as its parts
                    raise InputError(*result)
                out.append(result)
    except BrokenProcessPool:  # a worker died (out of memory?): read here, one file at a time
        return [_read_rank_file(file, rank, keep) for file, rank in files]
    return out


def _read_in_worker(entry: tuple[Path, int], keep: int) -> RankTrace | tuple:
    try:
        return _read_rank_file(entry[0], entry[1], keep)
    except InputError as exc:
        return (exc.subject, exc.cause, exc.line)


def _site(value: Any) -> Site | None:
    if value is None:
        return None
    line = int(value.get("line") or 0)
    return (str(value.get("path") or "?"), line, int(value.get("end_line") or line),
            str(value.get("function") or "?"))


class _Groups:
    """Interns the groups of one file: the recorder writes a group's JSON the same way each time,
    and torch names every group of a process differently."""

    def __init__(self, rank: int, table: list[dict[str, Any]]) -> None:
        self.rank = rank
        self.table = table
        self.ids: dict[tuple, int] = {}
        self.named: dict[str, int] = {}  # from `phase: "group"` lines
        self.members: list[frozenset[int]] = []
        self.highest = -1

    def intern(self, group: Any) -> int:
        if type(group) is str:
            gid = self.named.get(group)
            if gid is None:
                raise LookupError(f"group {group!r} is named before any line describes it")
            return gid
        ranks = group["ranks"]
        key = (group.get("name"), group.get("desc"), len(ranks), ranks[0] if ranks else None,
               ranks[-1] if ranks else None)
        gid = self.ids.get(key)
        if gid is None:
            if not isinstance(ranks, list) or not ranks or \
                    not all(type(r) is int and r >= 0 for r in ranks):
                raise ValueError(f"group ranks {str(ranks)[:80]} are not a list of ranks")
            if self.rank not in ranks:
                raise LookupError(f"an op of rank {self.rank} on group {ranks[:16]}"
                                  f"{'...' if len(ranks) > 16 else ''}, which does not hold it")
            gid = self.ids[key] = len(self.table)
            self.table.append(group)
            self.members.append(frozenset(ranks))
            self.highest = max(self.highest, max(ranks))
        return gid

    def declare(self, group: Any) -> None:
        self.named[str(group["name"])] = self.intern(group)


def _read_rank_file(file: Path, rank: int, keep: int) -> RankTrace:
    notes: list[str] = []
    return rank_trace(rank, file, json_lines(file, notes), keep, notes)


def json_lines(file: Path, notes: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every line of a rank file; stops, with a note, at the zeros a
    killed recorder leaves or at a last line cut short."""
    try:
        handle = file.open("rb")
    except OSError as exc:
        notes.append(f"{file.name}: unreadable ({exc})")
        return
    decode = json.JSONDecoder().decode  # json.loads without its per-line encoding sniffing
    number = 0
    with handle:
        for raw in handle:
            number += 1
            if not raw.strip():
                continue
            if raw[:1] == b"\x00":  # the zeros after a killed recorder's last line
                notes.append(f"{file.name}:{number}: the recorder never closed this file "
                             f"(its process was killed, or still runs)")
                return
            try:
                event = decode(raw.decode())
            except ValueError:  # UnicodeDecodeError is one
                if not raw.endswith(b"\n"):  # only a file's last line can lack its newline
                    notes.append(f"{file.name}:{number}: truncated last line (cut by a kill?), "
                                 f"skipped")
                    return
                raise inconsistent(file, "not a JSON line", number) from None
            if type(event) is not dict:
                raise inconsistent(file, "not a JSON object", number)
            yield number, event


def keep_per_rank(ranks: int, head_ops: int = HEAD_OPS) -> int:
    """How many ops of each of `ranks` processes `head` keeps."""
    return max(HEAD_PER_RANK, head_ops // max(1, ranks))


def rank_trace(rank: int, path: Path, lines: Iterable[tuple[int | None, dict[str, Any]]],
               keep: int, notes: list[str] | None = None) -> RankTrace:
    """One process's lines (its line number, None where there is none, and the object; the meta
    line first), in file order, as a `RankTrace` keeping the first `keep` ops in `head`. The one
    place events become a trace: recorded files and Flight Recorder dumps alike. `notes`: the
    trace's notes, which `lines` may still be adding to. InputError where a line contradicts
    the file it is in."""
    trace = RankTrace(rank, path, {}, notes=notes if notes is not None else [])
    groups = _Groups(rank, trace.groups)
    usage: Counter = Counter()
    batch_calls = trace.batch_calls
    head, open_ops = trace.head, {}
    in_head: dict[int, dict[str, Any]] = {}  # seq -> start event of the head
    batches: set[Any] = set()
    ops = 0
    highest, highest_line = -1, 0
    meta_seen = False

    def ended(event: dict[str, Any]) -> None:
        of = event.get("of")
        start = open_ops.pop(of, None)
        event.setdefault("error", None)
        if event.get("how") == "raise" and start is not None:
            trace.raised.append(start)
        if event.get("api") == "init_process_group":
            size = event.get("world_size")
            if type(size) is int and size > 0:
                trace.world_sizes.add(size)
        if of in in_head:
            in_head.pop(of)["end"] = event

    for number, event in lines:
        phase = event.get("phase")
        if not meta_seen:
            meta_seen = True
            if phase == "meta":
                _check_meta(event, path, rank, trace)
                continue
            trace.notes.append(f"{_at(path, number)}: no meta line before the first event")
        line_rank = event.get("rank")
        if line_rank != rank and line_rank is not None:
            raise inconsistent(path, f"a line of rank {line_rank!r} in the file of rank {rank}",
                               number)
        trace.lines += 1
        try:
            carried = event.get("ends")
            if carried is not None:  # ends learnt just before this line was written
                for of, how in carried:
                    if type(of) is not int or type(how) is not str:
                        raise ValueError(f"ends {str(carried)[:80]}")
                    start = open_ops.get(of)
                    end = {"seq": event["seq"], "t": event["t"], "rank": line_rank,
                           "api": start.get("api") if start else None, "phase": "end",
                           "of": of, "how": how}
                    ended(end)
                    if ops <= keep:
                        head.append(end)
            if phase == "start":
                kind = event.get("kind", "p2p")
                if kind not in KINDS or type(event.get("api")) is not str:
                    raise ValueError(f"kind {kind!r}, api {event.get('api')!r}")
                seq = event["seq"]
                if type(seq) is not int:
                    raise ValueError(f"seq {seq!r}")
                group = event.get("group")
                if kind != "setup":
                    gid = groups.intern(group) if group is not None else -1
                    peer = event.get("peer")
                    if peer is not None:
                        if type(peer) is not int or peer < 0:
                            raise ValueError(f"peer {peer!r}")
                        if gid >= 0 and peer not in groups.members[gid]:
                            raise LookupError(f"peer {peer} is not in its group "
                                              f"{groups.table[gid]['ranks'][:16]}")
                        if peer > highest:
                            highest, highest_line = peer, number or 0
                    via = event.get("via")
                    batch = event.get("batch")
                    site = _site(event.get("site"))
                    usage[(kind, event["api"], site, _site(event.get("op_site")), gid,
                           event.get("batched"), via, peer, batch is not None)] += 1
                    if via == "batch_isend_irecv" and batch not in batches:
                        batches.add(batch)
                        batch_calls[site] += 1
                    ops += 1
                open_ops[seq] = event
                if ops <= keep:
                    for key in OPTIONAL:
                        event.setdefault(key, None)
                    event["end"] = None
                    if kind != "setup" and group is not None:
                        event["group"] = groups.table[gid]  # one object per group
                    in_head[seq] = event
                    head.append(event)
                else:
                    trace.complete = False
            elif phase == "end":
                ended(event)
                if ops <= keep:
                    head.append(event)
            elif phase == "group":
                groups.declare(event["group"])
                if ops <= keep:
                    head.append(event)
            elif phase == "off":
                trace.notes.append(f"{_at(path, number)}: the recorder stopped in this process "
                                   f"({event.get('error')}): later ops are not in the trace")
                if ops <= keep:
                    head.append(event)
            else:
                raise ValueError(f"phase {phase!r}")
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise inconsistent(path, f"not a trace line ({exc})", number) from None
        except LookupError as exc:
            raise inconsistent(path, str(exc), number) from None
    trace.usage = Counter({Use(*key): n for key, n in usage.items()})
    trace.open_ops = [open_ops[seq] for seq in sorted(open_ops)]
    for event in trace.open_ops:
        if "end" not in event:  # beyond the head: made like the head's starts
            for key in OPTIONAL:
                event.setdefault(key, None)
            event["end"] = None
            if type(event["group"]) is str and event.get("kind") != "setup":
                event["group"] = groups.table[groups.named[event["group"]]]
    if groups.highest > highest:
        highest, highest_line = groups.highest, 0
    trace.highest = (highest, highest_line)
    if trace.raised:
        first = trace.raised[0]
        trace.notes.append(f"{path.name}: {len(trace.raised)} op(s) ended in an exception, first "
                           f"{first.get('api')} (seq {first.get('seq')})")
    return trace


def _at(path: Path, number: int | None) -> str:
    return f"{path.name}:{number}" if number else path.name


def _check_meta(meta: dict[str, Any], file: Path, rank: int, trace: RankTrace) -> None:
    said = meta.get("rank")
    if said is not None and said != rank:
        raise inconsistent(file, f"it holds the trace of rank {said!r} (its meta line says so), "
                                 f"not of rank {rank}", 1)
    size = meta.get("world_size")
    if type(size) is int and size > 0:
        trace.world_sizes.add(size)
    trace.meta = meta


def _world_size(root: Path, ranks: dict[int, RankTrace]) -> int | None:
    """The one world size the files agree on; InputError naming the files where they differ,
    or where a rank, a peer or a group member lies outside it."""
    by_size: dict[int, list[str]] = {}
    for rt in ranks.values():
        for size in rt.world_sizes:
            by_size.setdefault(size, []).append(rt.path.name)
    if len(by_size) > 1:
        parts = "; ".join(f"{_names(names)} world size {size}"
                          for size, names in sorted(by_size.items()))
        raise inconsistent(root, f"rank files of different runs: {parts}")
    if not by_size:
        return None
    (size,) = by_size
    for rank, rt in ranks.items():
        if rank >= size:
            raise inconsistent(rt.path, f"rank {rank} is outside the world of {size} ranks")
        value, line = rt.highest
        if value >= size:
            raise inconsistent(rt.path, f"rank {value} (a peer or group member) is outside the "
                                        f"world of {size} ranks", line or None)
    return size


def _names(names: list[str]) -> str:
    names = sorted(names, key=lambda n: (len(n), n))
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
