"""Whose end a rank's error follows from, and what came before both.

A rank whose op raised an error saying its peer closed the connection (gloo's "Connection reset
by peer", NCCL's "remote process exited": rules/torch.toml `[[peer_lost]]`) did not fail by
itself: its peer's process went first. Where that peer's file ends before the error, without an
exit record (a SIGKILL, an OOM kill, an abort inside gloo or NCCL) or by a signal, the peer's end
is the cause and the error its consequence; "the exception is the cause" would send the user to
the wrong rank (torchrun's own "Root Cause" names the peer).

Above both comes a mismatch between the two ranks that the end cannot have made: a send and its
receive that disagree in size or dtype (both sides were recorded), or unequal counts where the
peer ended inside an op (an abort in the exchange, or a wait on it that someone then killed). A
peer that ended between ops (killed while it computed) cut the exchange short itself: the count
it left unequal is its consequence.

Above a peer's end comes an earlier one: a process that left no exit record (SIGKILLed, OOM
killed, aborted) and whose last line precedes every end the other ranks recorded (an exit line,
a raise) ended first, even where no rank raised (all waited on it): the launcher's SIGTERM to
the others, their waits and their errors follow from it (torchrun's "Root Cause" names it). Its
end is only known to come after its last line: a process still alive when the launcher signalled
the others would have recorded that signal too. Wall clocks order ends on one host only; ranks
on several hosts (clocks that may differ by more than the gap) leave the order not known.

A peer that exited by itself (its exit line, `how` "exit") before its partner's op raised, having
posted fewer ops to that partner than the partner posted to it (a whole count mismatch, its side
short), ended with the exchange unmatched: that count is the cause above both, the partner's error
its consequence. A peer that left no exit record outside any op with such a count (`cut`) was
killed between ops or ended by its own os._exit: the trace cannot tell which, so the count is
listed beside its end with the launcher's exit code that decides.

A collective that raised on a lost connection after the rank that ended first is that end's
consequence too (its error names no peer: the member that ended first is the one it lost).

Where a rank died of an exception of its own, that crash leads (runevidence.crash_finding) and
nothing here applies: its end, not a peer's, explains the rest. An exception whose recorded chain holds
a lost connection (`raise ... from e` around an op's error, a wrapper's error) is no exception of
its own: that loss is its cause. One raised after the program caught a loss and went on (no such
link) is its own, and leads.

A process that exited by itself with an error status (`sys.exit(3)`) made no normal end: like a
signal's, its end is what its partners' errors that follow it follow from.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from auditor.dynamic.rankfile import RankTrace
from auditor.dynamic.trace import Trace
from auditor.rulebook import files as rulebook_files

# What a peer's end explains (analysis.causes): the errors of the ranks left talking to it, the
# ranks left waiting, the replay's cycle, and the counts its end cut short.
ENDED_EXPLAINS = ("run-crashed", "run-op-raised", "run-stopped-in-op", "wait-for-cycle",
                  "p2p-count-mismatch")
# The findings a peer's end is said in (runevidence.stopped_findings): a mismatch above the end
# explains them.
END_KINDS = ("rank-file-not-closed", "rank-ended-by-signal")
MISMATCH_KINDS = ("p2p-mismatch", "p2p-count-mismatch")


@dataclass(frozen=True)
class Loss:
    """`rank`'s op (`op`: its start line, with the error and `raised_t`) raised because `peer`
    had ended."""

    rank: int
    peer: int
    op: dict[str, Any]


@dataclass(frozen=True)
class Ends:
    losses: tuple[Loss, ...] = ()  # the first per rank, by rank
    above: tuple[str, ...] = ()  # the mismatch kinds between a lost pair: the cause above both
    first: int | None = None  # the rank that ended first, with no exit record, before all others
    unordered: str = ""  # a rank ended with no exit record, and why the files cannot say when
    exited: tuple[int, ...] = ()  # peers that exited by themselves with a count short
    cut: tuple[dict[str, Any], ...] = ()  # counts `first` left short (waitfor `cut_counts`)

    @property
    def peers(self) -> dict[int, list[Loss]]:
        """Each peer whose end others' errors follow from, with those errors."""
        out: dict[int, list[Loss]] = {}
        for loss in self.losses:
            out.setdefault(loss.peer, []).append(loss)
        return out

    @property
    def lead(self) -> int | None:
        """The rank whose end the others' ends follow from: the one that ended first, else the
        lowest peer that others' errors name."""
        return self.first if self.first is not None else min(self.peers, default=None)

    @property
    def explains(self) -> list[str]:
        """What the peers' ends explain: all but a mismatch above them."""
        return [k for k in ENDED_EXPLAINS if k not in self.above]

    def above_explains(self, kind: str) -> tuple[str, ...]:
        """What the mismatch `kind` explains besides its own where it is above the ends."""
        if kind not in self.above:
            return ()
        return tuple(k for k in END_KINDS + ENDED_EXPLAINS if k not in MISMATCH_KINDS)


@functools.cache
def _texts() -> tuple[str, ...]:
    return tuple(e["text"].lower() for e in rulebook_files.load("torch").data.get("peer_lost", []))


def peer_lost(error: Any) -> bool:
    """The error says the peer closed its end of the connection (`[[peer_lost]]`)."""
    return isinstance(error, str) and any(t in error.lower() for t in _texts())


def read(trace: Trace, waitfor: dict[str, Any] | None = None) -> Ends:
    """The ranks whose ops raised because a peer had ended, and the mismatches (`waitfor`: the
    join's replay, its `mismatched_pairs` and `count_mismatches`) above those ends."""
    if any(rt.crash is not None and not crash_lost(rt) for rt in trace.ranks.values()):
        return Ends()  # a rank died of its own exception: that crash leads
    wf = waitfor or {}
    first, unordered = _first_end(trace)
    cut = tuple(c for c in wf.get("cut_counts") or [] if c["short"] == first)
    # a pair whose side `short` exited by itself with fewer ops: (short, its partner)
    short = {(c["short"], c["src"] if c["short"] == c["dst"] else c["dst"])
             for c in wf.get("count_mismatches") or []}
    losses = []
    for rank, rt in sorted(trace.ranks.items()):
        loss = next((Loss(rank, lost, op) for op in rt.raised
                     if peer_lost(op.get("error")) and (lost := _lost(trace, rank, op, first, short))
                     is not None), None)
        if loss is not None:
            losses.append(loss)
    if not losses:
        return Ends(first=first, unordered=unordered, cut=cut)
    pairs = {frozenset((x.rank, x.peer)): x.peer for x in losses if x.op.get("peer") is not None}
    exited = tuple(sorted({p for p in pairs.values() if _exited(trace.ranks[p])}))
    above = []
    if any(frozenset((p["send"]["rank"], p["recv"]["rank"])) in pairs
           for p in wf.get("mismatched_pairs") or []):
        above.append("p2p-mismatch")
    if any(trace.ranks[pairs[pair]].pending() or pairs[pair] in exited for pair in
           (frozenset((c["src"], c["dst"])) for c in wf.get("count_mismatches") or []) if pair in pairs):
        above.append("p2p-count-mismatch")
    return Ends(tuple(losses), tuple(above), first, unordered, exited, cut)


def _lost(trace: Trace, rank: int, op: dict[str, Any], first: int | None,
          short: set[tuple[int, int]]) -> int | None:
    """The rank whose end `rank`'s op raised on: its peer where that ended before the raise; for
    a collective (no peer), the rank that ended first where it is a member of the op's group."""
    peer = op.get("peer")
    if peer is None:
        return first if first in _members(op) else None
    return peer if _ended_before(trace, peer, rank, op, short) else None


def _members(op: dict[str, Any]) -> frozenset[int]:
    """The ranks of the op's group (the reader resolves its name to the group line); none where
    no group was recorded: a member is then not known."""
    group = op.get("group")
    ranks = group.get("ranks") if isinstance(group, dict) else None
    return frozenset(ranks) if isinstance(ranks, list) else frozenset()


def crash_lost(rt: RankTrace) -> bool:
    """The process died of an exception that follows from a lost connection: its message says
    so, or a link of its recorded chain does (`raise ... from e` around the op's error, a wrapper
    raised while handling it). An error raised after the program caught a loss and went on has no
    such link: it is its own, and so is any crash of a recorder that wrote no chain."""
    crash = rt.crash or {}
    chain = crash.get("chain")
    return peer_lost(crash.get("error")) or isinstance(chain, list) and any(
        isinstance(link, dict) and peer_lost(link.get("error")) for link in chain)


def error_exit(rt: RankTrace) -> int | None:
    """The status of a process that exited by itself with an error (`sys.exit(3)`): no normal
    end, but an end its partners' errors follow from, as a signal's."""
    line = rt.exit or {}
    status = line.get("status")
    return status if line.get("how") == "exit" and type(status) is int and status != 0 else None


def _exited(rt: RankTrace) -> bool:
    """The process ended normally by itself: its exit line says status 0, or null (a return from
    the main module: sys.exit was not called)."""
    line = rt.exit or {}
    return line.get("how") == "exit" and line.get("status") in (0, None)


def _first_end(trace: Trace) -> tuple[int | None, str]:
    """The rank whose process ended first with no exit record (its file unclosed, the recorder
    not stopped): its last line precedes every other rank's end (an exit line, a raise, another
    unclosed file's last line). Second: where such a rank exists but the files cannot order its
    end, why."""
    unclosed = [r for r, rt in trace.ranks.items() if rt.unclosed is not None and rt.stopped is None]
    if not unclosed:
        return None, ""
    if trace.no_evidence():
        return None, "a rank that left no file may have ended before it"
    if len({rt.meta.get("host") for rt in trace.ranks.values()}) != 1:
        return None, "its ranks ran on several hosts, whose clocks may differ by more than the gap"
    ends = {r: end_wall(rt) for r, rt in trace.ranks.items()}
    known = {r: t for r, t in ends.items() if t is not None}
    if len(known) < len(ends):
        return None, "a file has no wall-clock time"
    rank = min(unclosed, key=lambda r: known[r])
    before = all(known[rank] < t for r, t in known.items() if r != rank)
    return (rank, "") if before else (None, "")


def end_wall(rt: RankTrace) -> float | None:
    """When a rank's process ended, or its last sign of life: its exit line, the first op that
    raised, else its last line."""
    times = [float(t) for t in [(rt.exit or {}).get("t"), *(op.get("raised_t") for op in rt.raised)]
             if isinstance(t, (int, float))]
    return _wall(rt.meta, min(times) if times else rt.last_t)


def _ended_before(trace: Trace, peer: Any, rank: int, op: dict[str, Any],
                  short: set[tuple[int, int]]) -> bool:
    """`peer`'s process ended, without an exit record, by a signal or an error exit, or by itself
    with its count to `rank` short (`short`: (short side, partner) pairs), before `rank`'s op
    raised (by wall clock: its last line, or its exit line, not after the raise). A recording that stopped says
    nothing of how its process ended."""
    prt = trace.ranks.get(peer) if type(peer) is int and peer != rank else None
    if prt is None or prt.stopped is not None:
        return False
    exit_line = prt.exit or {}
    if prt.unclosed is not None:
        ended = _wall(prt.meta, prt.last_t)
    elif exit_line.get("how") == "signal" or error_exit(prt) is not None or \
            _exited(prt) and (peer, rank) in short:
        ended = _wall(prt.meta, exit_line.get("t"))
    else:
        return False
    raised = _wall(trace.ranks[rank].meta, op.get("raised_t"))
    return ended is not None and raised is not None and ended <= raised


def _wall(meta: dict[str, Any], t: Any) -> float | None:
    """The wall-clock time of a line's `t` (seconds after its meta line's `wall0`)."""
    wall0 = meta.get("wall0")
    if not isinstance(wall0, (int, float)) or not isinstance(t, (int, float)):
        return None
    wall = float(wall0) + float(t)
    return wall if math.isfinite(wall) else None
