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
import json
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path
from typing import Any, TypeVar

from auditor.dynamic.rankfile import (
    HEAD_OPS, RankTrace, inconsistent, json_lines, keep_per_rank, rank_trace,
)
from auditor.errors import InputError

RANK_FILE = re.compile(r"^rank-(\d+)(?:\.(\d+))?\.jsonl$")
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


def rank_files(root: Path) -> list[tuple[Path, int]]:
    """The rank files of a trace directory with their ranks, in name order. InputError where
    there is no such directory or no rank file in it."""
    if not root.is_dir():
        raise InputError(str(root), f"a file, not a trace directory: give {root.parent}" if root.is_file()
                         else "no such trace directory")
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
            if isinstance(result, _Refused):
                raise InputError(*result.parts)
            yield result


class _Refused:
    """An InputError a worker met, sent back as its parts (subject, cause, line)."""

    def __init__(self, parts: tuple[str, str, int | None]) -> None:
        self.parts = parts


def _in_worker(function: Callable[[Path, int], T], entry: tuple[Path, int]) -> T | _Refused:
    try:
        return function(*entry)
    except InputError as exc:
        return _Refused((exc.subject, exc.cause, exc.line))


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
    return rank_trace(rank, file, json_lines(file, notes), keep, notes)


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
