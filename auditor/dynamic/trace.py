"""The trace directory: one JSONL file per rank plus hang files; where they go and how to read them.

This is the one reader the rest of p2paudit uses (the join, the wait-for analysis). It is built for
traces of jobs that died: a rank may never have written, a restarted rank may have written twice,
a hang file may be unreadable. It reads what is there and says what it skipped. A trace that
contradicts itself (a peer outside the world, files of two runs, a file holding another rank) is
refused with the file and line: an analysis of it would be a fake answer. Each rank file is read
by `rankfile` (the lines, and what a `RankTrace` keeps of them), by parallel worker processes
when the trace is large (`per_rank_file`, which `p2paudit export` uses too).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path
from typing import Any, TypeVar

from auditor import reads
from auditor.dynamic import runinputs
from auditor.dynamic.rankfile import (
    HEAD_OPS,
    RankTrace,
    inconsistent,
    json_lines,
    keep_per_rank,
    no_constant,
    rank_trace,
)
from auditor.errors import InputError

RANK_FILE = re.compile(r"^rank-(\d+)(?:\.(\d+))?\.jsonl$")
# Ranks a trace lists by number where evidence is missing; beyond, they are counted (a claimed
# world of 10^7 ranks costs what its files hold, not a list of 10^7 ranks).
MISSING_LISTED = 1024
# Two processes of one rank that wrote at once are two runs, not a restart; wall clocks of two
# hosts may differ by this much (seconds).
CLOCKS_AGREE = 1.0
# The processes of one attempt start recording within this much of each other (torchrun starts a
# node's workers once every node has joined its rendezvous): a rank whose latest process ended
# this long before another rank's began is of an earlier run (seconds).
ONE_ATTEMPT = 60.0
HANG_FILE = re.compile(r"^hang-rank-(\d+)\.json$")
# A trace this large (bytes of rank files) is read by worker processes, one file at a time each.
PARALLEL_BYTES = 32 << 20

T = TypeVar("T")


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
class Trace:
    root: Path
    ranks: dict[int, RankTrace]
    world_size: int | None
    # Ranks of the world (or, where no world size is recorded, named by a group or peer) with no
    # trace file: the first MISSING_LISTED of them; `absent` has them all as (first, last) spans.
    missing: list[int]
    earlier: dict[int, list[RankTrace]]  # older processes of a rank (restarts), oldest first
    skipped: list[str]  # "rank-3.jsonl:57: truncated last line (cut by a kill?)", ...
    absent: list[tuple[int, int]] = field(default_factory=list)
    # Ranks whose file (or dump) is there but holds no event: no evidence either; why, per rank.
    silent: dict[int, str] = field(default_factory=dict)

    @property
    def missing_count(self) -> int:
        return sum(last - first + 1 for first, last in self.absent)

    def lacks(self, rank: int) -> bool:
        """This rank of the run left no trace file."""
        return any(first <= rank <= last for first, last in self.absent)

    def no_evidence(self) -> list[tuple[int, int]]:
        """Spans of the ranks with no evidence at all: no file, or a file without an event."""
        return merge_spans(self.absent + [(r, r) for r in self.silent])

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
    files = rank_files(root)
    keep = keep_per_rank(len(files), head_ops)
    skipped: list[str] = []
    by_rank: dict[int, list[RankTrace]] = {}
    for one in _read_all(files, keep, jobs):
        skipped += one.notes
        if one.meta or one.lines:
            by_rank.setdefault(one.rank, []).append(one)
        else:
            skipped.append(f"{one.path.name}: empty trace file")
    if not by_rank:
        raise InputError(str(root), "no rank-N.jsonl trace file holds a trace line")
    ranks: dict[int, RankTrace] = {}
    earlier: dict[int, list[RankTrace]] = {}
    for rank, traces in by_rank.items():
        traces.sort(key=lambda t: ((_span(t) or (0.0,))[0], t.path.name))
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
        if not file.is_file():  # a FIFO would block, a device never ends
            skipped.append(f"{file.name}: not a regular file, not read")
            continue
        try:
            report = json.loads(file.read_text(encoding="utf-8"), parse_constant=no_constant)
            if not isinstance(report, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError, RecursionError) as exc:
            skipped.append(f"{file.name}: unreadable hang file ({exc})")
            continue
        rank = int(match.group(1))
        if rank in ranks:
            ranks[rank].hang = report
        else:
            skipped.append(f"{file.name}: hang file of rank {rank}, which has no trace file")
    world_size = _world_size(root, ranks)
    _one_run(root, by_rank, ranks)
    _short_of_sends(ranks)
    runinputs.note(rt.meta for traces in by_rank.values() for rt in traces)
    silent = {rank: "its file holds only its meta line" for rank, rt in ranks.items()
              if not rt.lines}
    return evidence(root, ranks, world_size, earlier, skipped, silent,
                    "no trace file (the process never initialised, or wrote to another node's "
                    "directory)")


FILE_CUT = "file cut"  # the `stopped_reason` of a file found to lack ops that happened

# How a recorded receive ends where it surely completed: a waited or polled Work, or a blocking
# recv that returned (an irecv's "return" is only its call returning).
_RECEIVED = {"recv": ("return", "wait", "polled"), "irecv": ("wait", "polled")}
_SENT = ("send", "isend")


def _short_of_sends(ranks: dict[int, RankTrace]) -> None:
    """Mark `stopped` a rank file that holds fewer sends to a peer, on one group, than the peer's
    file records receives from it that completed: those receives were sent, so the file lacks
    ops that happened (cut after it was written: `head -c`, a copy taken mid-write, a disk that
    lost its tail). Read as a stopped recorder is (nothing past its end is evidence), not as a
    rank that waited at its last line or sent too few. Only where the sender's file is read
    whole (`complete`) and its process did not end by itself (an exit line closes the file)."""
    sends: dict[tuple[Any, int, int], int] = {}
    received: dict[tuple[Any, int, int], int] = {}
    for rank, rt in ranks.items():
        for event in rt.head:
            if event.get("phase") != "start" or event.get("kind") != "p2p" or event.get("peer") is None:
                continue
            api, end, group = event.get("api"), event.get("end"), event.get("group")
            group = group.get("name") if isinstance(group, dict) else group  # as the reader resolved it
            if api in _SENT:
                key = (group, rank, event["peer"])
                sends[key] = sends.get(key, 0) + 1
            elif end is not None and end.get("how") in _RECEIVED.get(str(api), ()):
                key = (group, event["peer"], rank)
                received[key] = received.get(key, 0) + 1
    for (group, src, dst), count in sorted(received.items(), key=str):
        sender = ranks.get(src)
        sent = sends.get((group, src, dst), 0)
        if sender is None or not sender.complete or sender.exit is not None or sender.stopped is not None \
                or count <= sent:
            continue
        sender.stopped = (f"its file holds {sent} send(s) to rank {dst} on group {group}, where rank "
                          f"{dst}'s file records {count} receive(s) from it that completed: the file "
                          "lacks ops that happened (cut after it was written?)")
        sender.stopped_line = sender.lines + 1
        sender.stopped_reason = FILE_CUT


def evidence(root: Path, ranks: dict[int, RankTrace], world_size: int | None,
             earlier: dict[int, list[RankTrace]], skipped: list[str], silent: dict[int, str],
             why: str) -> Trace:
    """The `Trace` of `ranks`, with the ranks that left no file: those below `world_size`, or,
    where no world size is recorded, those a group or a peer names. `why`: what a missing rank's
    absence means, said once for all of them."""
    if world_size:
        absent = gaps(sorted(ranks), world_size)
    else:
        named = {r for rt in ranks.values() for g in rt.groups for r in g.get("ranks") or ()}
        named |= {u.peer for rt in ranks.values() for u in rt.usage if u.peer is not None}
        absent = merge_spans([(r, r) for r in sorted(named - set(ranks))])
    trace = Trace(root, dict(sorted(ranks.items())), world_size, [], earlier, skipped, absent,
                  silent)
    for first, last in absent:
        trace.missing += range(first, min(last + 1, first + MISSING_LISTED - len(trace.missing)))
        if len(trace.missing) >= MISSING_LISTED:
            break
    if absent:
        one = absent == [(absent[0][0], absent[0][0])]
        skipped.append(f"rank{'' if one else 's'} {span_words(absent)}: {why}")
    for rank, reason in sorted(silent.items()):
        skipped.append(f"rank {rank}: {reason}: no evidence of what it did")
    return trace


def gaps(present: list[int], size: int) -> list[tuple[int, int]]:
    """The (first, last) spans of range(size) that the sorted `present` leaves out."""
    out, nxt = [], 0
    for r in present:
        if r >= size:
            break
        if r > nxt:
            out.append((nxt, r - 1))
        nxt = max(nxt, r + 1)
    if nxt < size:
        out.append((nxt, size - 1))
    return out


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def span_words(spans: list[tuple[int, int]], most: int = 8) -> str:
    """`1-3, 8, 10-11`: rank spans as a person writes them."""
    words = [str(a) if a == b else f"{a}-{b}" for a, b in spans[:most]]
    return ", ".join(words) + (f" and {len(spans) - most} more span(s)" if len(spans) > most else "")


def _one_run(root: Path, by_rank: dict[int, list[RankTrace]], latest: dict[int, RankTrace]) -> None:
    """InputError where the files are of two runs: two processes of one rank writing at once (a
    restarted rank's process begins after the old one's last line), or the latest process of a
    rank that ended long before another rank's latest began (rank 0 of one run would be joined
    with rank 1 of another)."""
    for traces in by_rank.values():
        for old, new in itertools.pairwise(traces):
            a, b = _span(old), _span(new)
            if a and b and b[0] < a[1] - (0.0 if old.meta.get("host") == new.meta.get("host")
                                          else CLOCKS_AGREE):
                raise inconsistent(root, f"two runs in one directory: {new.path.name} began "
                                         f"recording {a[1] - b[0]:.3f} s before {old.path.name} "
                                         f"wrote its last line (a restart begins after); record "
                                         f"each run into a directory of its own")
    spans = [(span, rt) for rt in latest.values() if rt.lines and (span := _span(rt))]
    if len(spans) > 1:
        began = max(spans, key=lambda x: x[0][0])
        ended = min(spans, key=lambda x: x[0][1])
        if began[0][0] > ended[0][1] + ONE_ATTEMPT:
            raise inconsistent(root, f"two runs in one directory: {began[1].path.name} began "
                                     f"recording {began[0][0] - ended[0][1]:.0f} s after "
                                     f"{ended[1].path.name}'s last line; record each run into a "
                                     f"directory of its own")


def _span(rt: RankTrace) -> tuple[float, float] | None:
    """(wall time of its first line, of its last), where its meta line says when it began."""
    wall0 = rt.meta.get("wall0")
    if type(wall0) not in (int, float) or not math.isfinite(wall0):  # type: ignore[arg-type]
        return None
    return float(wall0), float(wall0) + rt.last_t  # type: ignore[arg-type]


def rank_files(root: Path) -> list[tuple[Path, int]]:
    """The rank files of a trace directory with their ranks, in name order. InputError where
    there is no such directory or no rank file in it."""
    if not root.is_dir():
        raise InputError(str(root), f"a file, not a trace directory: give {root.parent}" if root.is_file()
                         else "no such trace directory")
    reads.note_folder(root, picks=lambda name: bool(RANK_FILE.match(name) or HANG_FILE.match(name)))
    files = [(f, int(m.group(1))) for f in sorted(root.iterdir())
             if (m := RANK_FILE.match(f.name)) and f.is_file()]
    if not files:
        raise InputError(str(root), "no rank-N.jsonl trace files (was the run recorded?)")
    return files


def per_rank_file(function: Callable[[Path, int], T], files: list[tuple[Path, int]],
                  workers: int) -> Iterator[T]:
    """`function(file, rank)` of each file, in order, by `workers` worker processes where more
    than one; an InputError a worker met is raised here. `function` must be a module's own (the
    workers find it by name)."""
    if workers < 2:
        for file, rank in files:
            yield function(file, rank)
        return
    # fork: the workers need nothing of the parent but the function's module, and spawn would
    # re-run the caller's __main__ (impossible for `python -` or a notebook).
    context = get_context("fork" if "fork" in get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        chunk = max(1, len(files) // (workers * 8))
        for result in pool.map(_in_worker, [function] * len(files), files, chunksize=chunk):
            if isinstance(result, _WorkerError):
                raise InputError(*result.parts)
            yield result


class _WorkerError:
    """An InputError a worker met, sent back as its parts (subject, cause, line)."""

    def __init__(self, parts: tuple[str, str, int | None]) -> None:
        self.parts = parts


def _in_worker(function: Callable[[Path, int], T], entry: tuple[Path, int]) -> T | _WorkerError:
    try:
        return function(*entry)
    except InputError as exc:
        return _WorkerError((exc.subject, exc.cause, exc.line))


def read_meta_lines(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The first (meta) line of every rank file: who wrote it (host, pid), without reading the
    events. The launcher's SIGUSR1 handler needs only this, at the moment a rank is stuck."""
    metas = []
    for file in sorted(Path(path).glob("rank-*.jsonl")):
        if not RANK_FILE.match(file.name) or not file.is_file():
            continue
        try:
            with file.open("rb") as f:
                meta = json.loads(f.readline())
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and meta.get("phase") == "meta":
            metas.append(meta)
    return metas


# --- reading the files ---------------------------------------------------------------------------

def _read_all(files: list[tuple[Path, int]], keep: int, jobs: int | None) -> list[RankTrace]:
    size = 0
    for file, _ in files:
        try:
            size += file.stat().st_size
        except OSError:
            pass
    workers = min(jobs or os.cpu_count() or 1, len(files))
    if jobs is None and size < PARALLEL_BYTES:
        workers = 1
    read = functools.partial(_read_rank_file, keep=keep)
    try:
        return list(per_rank_file(read, files, workers))
    except BrokenProcessPool:  # a worker died (out of memory?): read here, one file at a time
        return list(per_rank_file(read, files, 1))


def _read_rank_file(file: Path, rank: int, keep: int) -> RankTrace:
    notes: list[str] = []
    unclosed: list[str] = []
    trace = rank_trace(rank, file, json_lines(file, notes, unclosed), keep, notes)
    trace.unclosed = unclosed[0] if unclosed else None
    return trace


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
