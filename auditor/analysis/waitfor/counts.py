"""Count mismatches: where one rank sends a peer other than that peer receives in one exchange.

The replay says that ranks hang and on which ops; this says why in the terms of the program (MUST's
"lost message"): per pair and communicator, phase by phase, the first phase whose sends and
receives do not pair up, with the source line of each side. Apart from the replay because it reads
only its finished state (the ops, their communicators, what completed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from auditor.analysis.waitfor.model import Communicator, Key, Op


def count_mismatches(ops: Mapping[Key, Op], comm: Mapping[Key, Communicator],
                     entries: Mapping[int, Sequence[tuple[Key, ...]]],
                     done: set[Key]) -> list[dict[str, Any]]:
    """Per pair and communicator, phase by phase (`_Phases`): where one rank's phase sends
    other than its peer's matching phase receives, and an op of either is left waiting,
    the count mismatch behind the hang, with both source lines. Later phases are not compared
    (they no longer align). The replay asks only where it hangs.

    A side with fewer ops (`short`) that never reached a later phase with its peer and was left
    waiting on an op of this phase was cut, not short: its count says nothing (a recv/recv
    deadlock, a rank killed in the exchange). One that finished the phase and then waits on
    something else (a barrier, another peer) is short: that wait is the mismatch's consequence.
    `moved_on`: whether it reached a later phase with its peer; one that did not may still have
    been cut between ops or in an op with another peer (a recording's end: the join asks the
    trace how its process ended)."""
    phases = _Phases(ops, entries)
    by_pair: dict[tuple[Communicator, int, int], list[Key]] = {}
    for key in sorted(ops):
        op = ops[key]
        if op.kind != "collective" and op.peer is not None:
            by_pair.setdefault((comm[key], op.rank, op.peer), []).append(key)
    out = []
    for (communicator, a, b), mine in by_pair.items():
        theirs = by_pair.get((communicator, b, a))
        if a > b or theirs is None:
            continue
        ours, peers = phases.of(mine), phases.of(theirs)
        for i, (pa, pb) in enumerate(zip(ours, peers)):
            (sa, ra), (sb, rb) = _kinds(ops, pa), _kinds(ops, pb)
            if len(sa) == len(rb) and len(ra) == len(sb):
                continue
            if all(k in done for k in pa + pb):
                break
            # The direction with more receives than sends, else more sends than receives.
            src, dst, sends, recvs = (a, b, sa, rb) if len(rb) > len(sa) or \
                len(sa) == len(rb) and len(sb) > len(ra) else (b, a, sb, ra)
            if len(sends) == len(recvs):
                src, dst, sends, recvs = (b, a, sb, ra) if src == a else (a, b, sa, rb)
            # The side with fewer ops may have had more to post when its program ends there.
            short = src if len(sends) < len(recvs) else dst
            moved_on = i + 1 < len(ours if short == a else peers)
            if not moved_on and any(k not in done for k in (pa if short == a else pb)):
                break  # it stopped inside this exchange: its count is cut, not short
            out.append({
                "communicator": communicator.name, "src": src, "dst": dst,
                "sends": len(sends), "recvs": len(recvs),
                "send_site": _site(ops, sends, pa if src == a else pb),
                "recv_site": _site(ops, recvs, pb if src == a else pa),
                "short": short, "moved_on": moved_on,
                "send_chosen": _site(ops, sends, pa if src == a else pb, "chosen"),
                "recv_chosen": _site(ops, recvs, pb if src == a else pa, "chosen"),
                "words": f"in one exchange, rank {dst} posts {len(recvs)} RECV(s) from "
                         f"{src} on {communicator.name} where rank {src} sends it {len(sends)}"})
            break
    return out


class _Phases:
    """One rank's ops with one peer on one communicator, cut into phases: a step is the ops
    issued without waiting in between (a batch, or isends then irecvs then waits); a phase
    is a run of steps that only send, only receive, or both."""

    def __init__(self, ops: Mapping[Key, Op], entries: Mapping[int, Sequence[tuple[Key, ...]]]) -> None:
        self.ops = ops
        self.entries = entries
        self.epochs: dict[int, list[int]] = {}

    def _epoch(self, key: Key) -> int:
        """How many times the rank waited (an op issued after others completed) before `key`."""
        rank, index = key
        if rank not in self.epochs:
            count, epochs = 0, []
            for entry in self.entries[rank]:
                for k in entry:
                    count += bool(self.ops[k].after)
                    epochs.append(count)
            self.epochs[rank] = epochs
        return self.epochs[rank][index]

    def of(self, keys: list[Key]) -> list[list[Key]]:
        steps: list[list[Key]] = []
        for key in keys:
            if not steps or self._epoch(key) != self._epoch(steps[-1][-1]):
                steps.append([key])
            else:
                steps[-1].append(key)
        phases: list[list[Key]] = []
        shape = None
        for step in steps:
            kinds = frozenset(self.ops[k].kind for k in step)
            if phases and kinds == shape:
                phases[-1].extend(step)
            else:
                phases.append(list(step))
                shape = kinds
        return phases


def _kinds(ops: Mapping[Key, Op], keys: list[Key]) -> tuple[list[Key], list[Key]]:
    return ([k for k in keys if ops[k].kind == "send"], [k for k in keys if ops[k].kind == "recv"])


def _site(ops: Mapping[Key, Op], chosen: list[Key], phase: list[Key],
          attr: str = "where") -> str | None:
    """Where a count is read: the last op counted, else the op its rank issued instead (`attr`
    "chosen": the framework line that chose that op)."""
    return getattr(ops[chosen[-1]] if chosen else ops[phase[0]], attr) or None
