"""What a replay answers: whether it hangs, each rank's state op by op, and the hang in words.

Kept apart from the replay that computes it so that the readers (the deadlock verdicts, the
join, simulate's prediction, repro) depend on the answer's shape, not on how it is found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.analysis.waitfor.model import Conditions, Op


@dataclass
class OpState:
    op: Op
    communicator: str
    coalesced: bool
    state: str  # done | blocked | queued | not_issued
    blocked_on: dict[str, Any] | None = None  # a wait-for edge (graph.edge_json)
    members: tuple[int, ...] = ()  # the ranks of the communicator the op runs on

    def to_json(self) -> dict[str, Any]:
        op = self.op
        return {"index": op.index, "api": op.api, "peer": op.peer, "bytes": op.nbytes,
                "group": {"ranks": list(op.group.ranks), "desc": op.group.desc},
                "batch": op.batch, "coalesced": self.coalesced, "call": op.call,
                "communicator": self.communicator, "state": self.state,
                "blocked_on": self.blocked_on}


@dataclass
class RankState:
    rank: int
    cpu: str  # finished | creating | waiting
    words: str  # where this rank is, in one clause
    ops: list[OpState] = field(default_factory=list)
    blocked_on: list[dict[str, Any]] = field(default_factory=list)  # what its CPU waits for

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "cpu": self.cpu, "words": self.words,
                "blocked_on": self.blocked_on, "ops": [o.to_json() for o in self.ops]}


@dataclass
class Analysis:
    hang: bool
    conditions: Conditions
    ranks: dict[int, RankState]
    cycle: str  # the wait-for cycle in words; "" when none
    blocked: list[str]  # one sentence per blocked rank
    # Send/receive pairs (as FIFO order per communicator pairs them) whose sizes or dtypes differ:
    # the receiver gets other bytes than were sent, silently or as a hang.
    mismatched_pairs: list[dict[str, Any]] = field(default_factory=list)
    # Per communicator and direction: more of one kind (sends or receives) than the peer issues
    # of the other before it ended or moved on to another exchange with this rank (`counts.count_mismatches`).
    count_mismatches: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> str:
        if not self.hang:
            return f"no hang: every op completes ({self.conditions.words()})"
        head = f"HANG ({self.conditions.words()})"
        body = "\n".join(f"  {line}" for line in self.blocked)
        tail = f"\n  wait-for cycle: {self.cycle}" if self.cycle else \
            "\n  no cycle: a rank waits for an op nobody issues"
        return f"{head}\n{body}{tail}"

    def to_json(self) -> dict[str, Any]:
        return {"hang": self.hang, "conditions": self.conditions.to_json(),
                "cycle": self.cycle, "blocked": self.blocked,
                "mismatched_pairs": self.mismatched_pairs,
                "count_mismatches": self.count_mismatches,
                "ranks": [r.to_json() for r in self.ranks.values()]}
