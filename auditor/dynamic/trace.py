"""The trace directory: one JSONL file per rank plus hang files; where they go and how to read them.

This is the one reader the rest of p2paudit uses (the join, the wait-for analysis). It is built for
traces of jobs that died: a SIGKILL can cut a rank's last line, a rank may never have written, a
restarted rank may have written twice. It reads what is there and says what it skipped.

Lines (DESIGN.md section 3), one JSON object each, written and flushed one at a time:
- the first line of a file: `phase: "meta"` (pid, host, versions, argv, and the clocks: `t` of
  every line is seconds since `mono0`, this process's time.monotonic() when recording started,
  which was `wall0` in time.time());
- `phase: "start"`: an op, written before it is handed to torch. `kind` is "p2p", "collective" or
  "setup" (init_process_group, new_group: no peer, group, shape). Keys a line leaves out are
  filled with None by the reader: `batched`, `peer`, `group`, `shape`, `dtype`, and the optional
  `via` ("batch_isend_irecv"), `batch` (ordinal of the batch or coalescing window in this
  process), `op_site` (where the P2POp was built), `comm_init` (`{"kind": "pair", "key": "0:1"}`
  or `{"kind": "group", "key": "all"}`: the op that creates a communicator under NCCL's lazy
  init), `error`;
- `phase: "end"`: `of` is the start's seq; `how` is "return" (the call returned), "wait" (its Work
  was waited on), "polled" (its Work reported completion), "dropped" (its Work was freed unwaited)
  or "raise" (`error` names the exception).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.errors import InputError

RANK_FILE = re.compile(r"^rank-(\d+)(?:\.(\d+))?\.jsonl$")
HANG_FILE = re.compile(r"^hang-rank-(\d+)\.json$")
OPTIONAL = ("batched", "peer", "group", "shape", "dtype", "via", "batch", "op_site",
            "comm_init", "error")


def rank_file(directory: Path, rank: int, pid: int) -> tuple[int, Path]:
    """Create this process's trace file: `rank-N.jsonl`, or `rank-N.PID.jsonl` if a previous
    process of the same rank (a restart) already wrote one. Returns an O_APPEND descriptor."""
    directory.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
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
    """One process's trace. `events` holds every line after the meta line, in file order; each
    start event carries `end`: its end event, or None while it was pending when the file ends."""

    rank: int
    path: Path
    meta: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    hang: dict[str, Any] | None = None

    def starts(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Start events, optionally of one kind ("p2p", "collective", "setup")."""
        return [e for e in self.events
                if e.get("phase") == "start" and (kind is None or e.get("kind") == kind)]

    def pending(self) -> list[dict[str, Any]]:
        """Ops that never ended in this file: in flight when the process stopped writing."""
        return [e for e in self.starts() if e["end"] is None]


@dataclass
class Trace:
    root: Path
    ranks: dict[int, RankTrace]
    world_size: int | None
    missing: list[int]  # ranks below world_size with no trace file
    earlier: dict[int, list[RankTrace]]  # older processes of a rank (restarts), oldest first
    skipped: list[str]  # "rank-3.jsonl:57: truncated last line (cut by a kill?)", ...


def read_trace_dir(path: str | os.PathLike[str]) -> Trace:
    """Read every rank file and hang file under `path`; InputError when there is no trace."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(str(root), "no such trace directory")
    skipped: list[str] = []
    by_rank: dict[int, list[RankTrace]] = {}
    for file in sorted(root.iterdir()):
        match = RANK_FILE.match(file.name)
        if match:
            rank_trace = _read_rank_file(file, int(match.group(1)), skipped)
            if rank_trace is not None:
                by_rank.setdefault(rank_trace.rank, []).append(rank_trace)
    if not by_rank:
        raise InputError(str(root), "no rank-N.jsonl trace files (was the run recorded?)")
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
        except (OSError, ValueError) as exc:
            skipped.append(f"{file.name}: unreadable hang file ({exc})")
            continue
        rank = int(match.group(1))
        if rank in ranks:
            ranks[rank].hang = report
        else:
            skipped.append(f"{file.name}: hang file of rank {rank}, which has no trace file")
    world_size = _world_size(ranks.values())
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


def _read_rank_file(file: Path, rank: int, skipped: list[str]) -> RankTrace | None:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        skipped.append(f"{file.name}: unreadable ({exc})")
        return None
    lines = raw.split(b"\n")
    cut = lines[-1] != b""  # a complete file ends with a newline
    trace: RankTrace | None = None
    starts: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
            if not isinstance(event, dict):
                raise ValueError("not an object")
        except ValueError:
            last = number == len(lines) and cut
            why = "truncated last line (cut by a kill?)" if last else "unparsable line"
            skipped.append(f"{file.name}:{number}: {why}, skipped")
            continue
        if trace is None:
            if event.get("phase") != "meta":
                skipped.append(f"{file.name}:{number}: no meta line before the first event")
                trace = RankTrace(rank, file, {})
            else:
                trace = RankTrace(rank, file, event)
                continue
        if event.get("phase") == "start":
            for key in OPTIONAL:
                event.setdefault(key, None)
            event["end"] = None
            if isinstance(event.get("seq"), int):
                starts[event["seq"]] = event
        elif event.get("phase") == "end":
            event.setdefault("error", None)
            start = starts.get(event.get("of"))
            if start is not None:
                start["end"] = event
        trace.events.append(event)
    if trace is None:
        skipped.append(f"{file.name}: empty trace file")
    return trace


def _world_size(traces) -> int | None:
    sizes = [e.get("world_size") for t in traces for e in t.events
             if e.get("api") == "init_process_group" and e.get("phase") == "end"]
    sizes += [t.meta.get("world_size") for t in traces]
    sizes = [s for s in sizes if isinstance(s, int) and s > 0]
    return max(sizes) if sizes else None
