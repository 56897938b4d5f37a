"""One process's trace file read into a `RankTrace`: aggregates and the windows that matter.

It is built for traces of jobs that died (a SIGKILL can cut a file's last line or leave zeros
after it) and for cluster traces (1,024 ranks x 20k events): a file is streamed once into a
`RankTrace` that keeps the op counts per (what, where, group, peer) (`usage`), the file's first
lines (`head`: what the timeline and the wait-for replay read), and the ops that never ended
(`open_ops`), never every event. Groups are interned once per file (`groups`). A line that
contradicts its file (another rank's line, a peer outside its group, a line that is not a trace
line) is refused with the file and line. The lines, one JSON object each:
- the first line of a file: `phase: "meta"` (pid, host, versions, argv and its `cwd`, and the
  clocks: `t` of every line is seconds since `mono0`, this process's time.monotonic() when
  recording started, which was `wall0` in time.time());
- `phase: "group"`: a process group, once per process before its first op (`group`: ranks, size,
  desc, name, backend, eager); op lines then give the group's name as their `group` (traces of
  earlier recorders repeat the whole group in every op line: read the same way);
- `phase: "start"`: an op, written before it is handed to torch. `kind` is "p2p", "collective" or
  "setup" (init_process_group, new_group: no peer, group, shape). Keys a line leaves out are
  filled with None by the reader: `batched`, `peer`, `group`, `shape`, `dtype`, and the optional
  `via` ("batch_isend_irecv"), `batch` (ordinal of the batch or coalescing window in this
  process), `op_site` (where the P2POp was built), `comm_init` (`{"kind": "pair", "key": "0:1"}`
  or `{"kind": "group", "key": "all"}`: the op that creates a communicator under NCCL's lazy
  init), `error`, `chosen` (the framework line that chose the op, where not `site`: the first
  frame outside the rules' comm wrappers);
- `phase: "end"`: `of` is the start's seq; `how` is "return" (the call returned), "wait" (its Work
  was waited on), "polled" (its Work reported completion), "dropped" (its Work was freed unwaited)
  or "raise" (`error` names the exception). A start line may carry `ends`, `[[of, how], ...]`:
  ends learnt just before it was written (dropped Works), read as end lines with that line's
  `seq` and `t`, before its op;
- `phase: "off"`: the recorder stopped recording in this process (`error`: why; `reason`: "disk
  full" when the trace's filesystem filled, "file size limit" at the process's `ulimit -f`,
  "internal error"): what the process did after it is
  not in the file, so its open ops are not pending but unknown (`stopped`);
- `phase: "exception"` (an uncaught exception: `error`, `type`, `thread`, `main`, `at`, `chain`) and
  `phase: "exit"` (how the process ended: `how` "exit", "exception" or "signal"), written by
  auditor/dynamic/ending.py: a process that died of an exception or exited is not waiting in
  the ops it left open (`crash`, `pending`); one without them was killed or still runs.
The line's contract: docs/schema/trace-line.schema.json (docs/design.md).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from auditor.errors import InputError

FILE_LIMIT = "recording stopped: the file size limit (ulimit -f)"  # the `off` line's error at RLIMIT_FSIZE

OPTIONAL = ("batched", "peer", "group", "shape", "dtype", "via", "batch", "op_site",
            "comm_init", "error", "chosen")
KINDS = ("p2p", "collective", "setup")
# Ops kept in full per trace (`head`), spread over the ranks, and at least this many per rank:
# the timeline draws 16 per rank, the wait-for replay reads up to 32,768 in all.
HEAD_OPS = 32_768
HEAD_PER_RANK = 32

Site = tuple  # (path, line, end_line, function), as the recorder names a line of code


class OpUsage(NamedTuple):
    """What a run of ops had in common; `RankTrace.usage` counts ops per OpUsage."""

    kind: str  # p2p | collective
    api: str
    site: Site | None
    op_site: Site | None  # where the P2POp of a batched op was built
    group: int  # index into RankTrace.groups; -1: none recorded
    batched: bool | None  # a coalescing window ran around it
    via: str | None  # "batch_isend_irecv" for ops a batch issued
    peer: int | None
    in_batch: bool  # it carries a batch id (batch_isend_irecv call or coalescing window)


IN_FLIGHT = "in flight at exit"  # an op a process left open when it ended by itself: not waiting

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
    usage: Counter = field(default_factory=Counter)  # OpUsage -> ops
    batch_calls: Counter = field(default_factory=Counter)  # site -> batch_isend_irecv calls
    # (site, the framework line that chose its op: the line's `chosen`) -> ops, where recorded
    chosen: Counter = field(default_factory=Counter)
    lines: int = 0  # lines after the meta line
    last_t: float = 0.0  # `t` of its last line: the process wrote from wall0 to wall0 + last_t
    # How the file ends where its process did not close it (killed, or still running): the
    # zeros after its last line, or a last line cut short. None: closed.
    unclosed: str | None = None
    # ops whose end line's how is "raise": the start line, with the end's `error` and `raised_t`
    raised: list[dict[str, Any]] = field(default_factory=list)
    world_sizes: set[int] = field(default_factory=set)  # what the meta and init lines say
    highest: tuple[int, int] = (-1, 0)  # (largest rank a peer or group names, its line)
    notes: list[str] = field(default_factory=list)
    hang: dict[str, Any] | None = None
    stopped: str | None = None  # the `off` line's error: the file ends before the process did
    stopped_line: int = 0
    # the `off` line's reason ("disk full", "file size limit", "internal error"; earlier
    # recorders wrote none, for an internal error), or trace.FILE_CUT: what gives the whole run
    stopped_reason: str = ""
    exceptions: list[dict[str, Any]] = field(default_factory=list)  # `exception` lines
    exit: dict[str, Any] | None = None  # the `exit` line: how the process ended

    @property
    def crash(self) -> dict[str, Any] | None:
        """The exception the process died of (its main thread's uncaught one), if it did."""
        return next((e for e in self.exceptions if e.get("main")), None)

    @property
    def ended(self) -> bool:
        """The process ended by itself, of an exception or by exiting (not by a signal): the
        ops it left open were in flight when it went, not waiting."""
        how = (self.exit or {}).get("how")
        return self.crash is not None or how in ("exit", "exception")

    @property
    def ops(self) -> int:
        """P2P ops and collectives, all of them (not only the head's)."""
        return sum(self.usage.values())

    def starts(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Start events of the head, optionally of one kind ("p2p", "collective", "setup")."""
        return [e for e in self.head
                if e.get("phase") == "start" and (kind is None or e.get("kind") == kind)]

    def pending(self) -> list[dict[str, Any]]:
        """Ops that never ended in this file, the process waiting in them when it stopped
        writing. None where the recorder stopped first (`stopped`: an end line it did not write
        is unknown) or the process ended by itself (`ended`: they were in flight, not waiting;
        a signal's end keeps them: a hung rank is often ended by one)."""
        return [] if self.stopped is not None or self.ended else self.open_ops


def inconsistent(subject: Path, cause: str, line: int | None = None) -> InputError:
    """Exit 2, naming the file (and line) and what contradicts what."""
    return InputError(str(subject), f"the trace is inconsistent: {cause}", line)


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
            if len(set(ranks)) != len(ranks):
                raise LookupError(f"group ranks {str(ranks)[:80]} name a rank twice")
            if group.get("size") not in (None, len(ranks)):
                raise LookupError(f"group of size {group.get('size')!r} with {len(ranks)} ranks")
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


# A rank file the recorder never closed: why its file ends where it does. `json_lines` appends it
# to its caller's list; `RankTrace.unclosed` holds it.
ZEROS = "the recorder never closed this file (its process was killed, or still runs)"
CUT = "its last line is cut short (by a kill?)"
SEQ_LIMIT = 1 << 63  # a seq the recorder's int64 counter can reach


def no_constant(name: str) -> Any:
    """json's `parse_constant`: NaN and Infinity are not numbers a trace or hang file holds."""
    raise ValueError(f"{name} is not a number a trace line holds")


def json_lines(file: Path, notes: list[str], unclosed: list[str] | None = None
               ) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every line of a rank file; stops, with a note (and the reason
    appended to `unclosed`), at the zeros a killed recorder leaves or at a last line cut short.
    NaN and Infinity are not JSON a recorder writes: such a line is refused."""
    try:
        handle = file.open("rb")
    except OSError as exc:
        notes.append(f"{file.name}: unreadable ({exc})")
        return
    # json.loads without its per-line encoding sniffing
    decode = json.JSONDecoder(parse_constant=no_constant).decode
    number = 0
    with handle:
        for raw in handle:
            number += 1
            if not raw.strip():
                continue
            if raw[:1] == b"\x00":  # the zeros after a killed recorder's last line
                notes.append(f"{file.name}:{number}: {ZEROS}")
                if unclosed is not None:
                    unclosed.append(ZEROS)
                return
            try:
                event = decode(raw.decode())
            except RecursionError:
                raise inconsistent(file, "a JSON line nested too deeply", number) from None
            except ValueError as exc:  # UnicodeDecodeError is one
                if not raw.endswith(b"\n"):  # only a file's last line can lack its newline
                    notes.append(f"{file.name}:{number}: truncated last line (cut by a kill?), "
                                 f"skipped")
                    if unclosed is not None:
                        unclosed.append(CUT)
                    return
                why = str(exc) if "not a number" in str(exc) else "not a JSON line"
                raise inconsistent(file, why, number) from None
            if type(event) is not dict:
                raise inconsistent(file, "not a JSON object", number)
            yield number, event


def carried_ends(event: dict[str, Any]) -> list[tuple[int, str]]:
    """The ends a line carries (`ends`: ops whose Works were freed unwaited just before it was
    written), as (seq, how); ValueError where an entry is not that, read as a malformed line by
    every reader (the trace's and export's)."""
    carried = event.get("ends")
    if carried is None:
        return []
    out = []
    for entry in carried:
        of, how = entry
        if type(of) is not int or type(how) is not str:
            raise ValueError(f"ends {str(carried)[:80]}")
        out.append((of, how))
    return out


def keep_per_rank(ranks: int, head_ops: int = HEAD_OPS) -> int:
    """How many ops of each of `ranks` processes `head` keeps."""
    return max(HEAD_PER_RANK, head_ops // max(1, ranks))


def checked_lines(path: Path, rank: int, lines: Iterable[tuple[int | None, dict[str, Any]]],
                  notes: list[str], meta: dict[str, Any]) -> Iterator[tuple[int | None, dict]]:
    """The lines of one process's file after its meta line, which goes into `meta` (a note where
    the file has none). InputError where the meta line, or a line, is another rank's."""
    first = True
    for number, event in lines:
        if first:
            first = False
            if event.get("phase") == "meta":
                said = event.get("rank")
                if said is not None and said != rank:
                    raise inconsistent(path, f"it holds the trace of rank {said!r} (its meta "
                                             f"line says so), not of rank {rank}", 1)
                meta.update(event)
                continue
            notes.append(f"{_at(path, number)}: no meta line before the first event")
        line_rank = event.get("rank")
        if line_rank != rank and line_rank is not None:
            raise inconsistent(path, f"a line of rank {line_rank!r} in the file of rank {rank}",
                               number)
        yield number, event


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
    chosen = trace.chosen
    head = trace.head
    open_ops: dict[Any, dict[str, Any]] = {}  # seq -> start event of an op not yet ended
    in_head: dict[int, dict[str, Any]] = {}  # seq -> start event of the head
    batches: set[Any] = set()
    finished: set[Any] = set()  # seq of every op that ended
    ops = 0
    highest, highest_line = -1, 0
    last_seq, last_t = 0, 0.0

    def ended(event: dict[str, Any]) -> None:
        of = event.get("of")
        start = open_ops.pop(of, None)
        if start is None:
            raise LookupError(f"op seq {of!r} ended twice" if of in finished else
                              f"an end of op seq {of!r}, which never started")
        finished.add(of)
        event.setdefault("error", None)
        if event.get("how") == "raise":  # the start, with the error its end names and its `t`
            group = start.get("group")  # beyond the head still a name: its members, for peerend
            if type(group) is str and start.get("kind") != "setup":
                group = groups.table[groups.intern(group)]
            trace.raised.append({**start, "error": event.get("error") or start.get("error"),
                                 "raised_t": event.get("t"), "group": group})
        if event.get("api") == "init_process_group":
            size = event.get("world_size")
            if type(size) is int and size > 0:
                trace.world_sizes.add(size)
        if of in in_head:
            in_head.pop(of)["end"] = event

    for number, event in checked_lines(path, rank, lines, trace.notes, trace.meta):
        phase = event.get("phase")
        trace.lines += 1
        try:
            last_seq, last_t = _ordered(event, last_seq, last_t)
            for of, how in carried_ends(event):  # ends learnt just before this line was written
                start = open_ops.get(of)
                end = {"seq": event["seq"], "t": event["t"], "rank": event.get("rank"),
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
                    if "chosen" in event:
                        chosen[(site, _site(event["chosen"]))] += 1
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
            elif phase == "exception":
                _check_exception(event)
                trace.exceptions.append(event)
            elif phase == "exit":
                if event.get("how") not in ("exit", "exception", "signal") or \
                        type(event.get("status", 0)) not in (int, type(None)) or \
                        type(event.get("signal", "")) is not str:
                    raise ValueError(f"exit {str(event)[:80]}")
                trace.exit = event
            elif phase == "off":
                trace.stopped, trace.stopped_line = str(event.get("error")), number or 0
                # recorders before e1960c0 wrote reason "disk full" beside the file size limit's error
                trace.stopped_reason = "file size limit" if event.get("error") == FILE_LIMIT \
                    else str(event.get("reason") or "internal error")
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
    trace.last_t = last_t
    trace.usage = Counter({OpUsage(*key): n for key, n in usage.items()})
    trace.open_ops = [open_ops[seq] for seq in sorted(open_ops)]
    for event in trace.open_ops:
        if "end" not in event:  # beyond the head: made like the head's starts
            for key in OPTIONAL:
                event.setdefault(key, None)
            event["end"] = None
            if type(event["group"]) is str and event.get("kind") != "setup":
                event["group"] = groups.table[groups.intern(event["group"])]
    size = trace.meta.get("world_size")
    if type(size) is int and size > 0:
        trace.world_sizes.add(size)
    if groups.highest > highest:
        highest, highest_line = groups.highest, 0
    trace.highest = (highest, highest_line)
    if trace.raised:
        first = trace.raised[0]
        trace.notes.append(f"{path.name}: {len(trace.raised)} op(s) ended in an exception, first "
                           f"{first.get('api')} (seq {first.get('seq')})")
    return trace


def _check_exception(event: dict[str, Any]) -> None:
    """ValueError where an `exception` line is not what ending.py writes (the reports read it)."""
    if type(event.get("error")) is not str or type(event.get("main")) is not bool:
        raise ValueError(f"exception {str(event)[:80]}")
    for key in ("at", "raised"):
        site = event.get(key)
        if site is not None and (type(site) is not dict or type(site.get("path")) is not str
                                 or type(site.get("line")) is not int):
            raise ValueError(f"{key} {str(site)[:80]}")
    chain = event.get("chain")
    if chain is not None and (type(chain) is not list or not all(
            type(link) is dict and type(link.get("error")) is str for link in chain)):
        raise ValueError(f"chain {str(chain)[:80]}")


def _ordered(event: dict[str, Any], last_seq: int, last_t: float) -> tuple[int, float]:
    """The line's (seq, t), checked against the line before: the recorder numbers its lines one
    by one under a lock, so a seq not above the last one is a reused or foreign line (a reused
    seq would hide a pending op). A line without them (a Flight Recorder end) keeps the last."""
    seq, t = event.get("seq"), event.get("t")
    if t is not None:
        if type(t) not in (int, float) or not math.isfinite(t):
            raise ValueError(f"t {t!r}")
        last_t = max(last_t, t)
    if seq is None and event.get("phase") == "end":
        return last_seq, last_t
    if type(seq) is not int or not 0 <= seq < SEQ_LIMIT:
        raise ValueError(f"seq {seq!r:.40}")
    if seq <= last_seq:
        raise LookupError(f"seq {seq} after seq {last_seq}: a reused seq (lines of two "
                          f"processes in one file?)")
    return seq, last_t


def _at(path: Path, number: int | None) -> str:
    return f"{path.name}:{number}" if number else path.name
