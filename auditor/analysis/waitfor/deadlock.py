"""MUST's two verdicts on one op order: it *can* deadlock (under the zero-buffer contract) and it
*will* deadlock here (with each candidate transport's bounds and the recorded sizes)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from collections.abc import Callable
from typing import Any

from auditor.analysis.waitfor.model import Conditions
from auditor.analysis.waitfor.result import Analysis
from auditor.analysis.waitfor.sizes import size_words
from auditor.analysis.waitfor.transports import ZERO_BUFFER, Transport, candidates, nccl_words


@dataclass
class TransportVerdict:
    """Will this order deadlock over one transport: True, False, or None where the sizes that
    decide it lie between what the transport is known to complete and what it is known to hang."""

    transport: Transport
    will: bool | None
    why: str
    decide: str = ""  # what would decide it, where `will` is None

    def to_json(self) -> dict[str, Any]:
        return {"transport": self.transport.to_json(), "will_deadlock": self.will,
                "why": self.why, "decide": self.decide or None}


@dataclass
class Deadlock:
    """MUST's two verdicts on one op order. `can`: it deadlocks under the zero-buffer contract
    (every send waits for its receive), so some transport and size hangs it. `will`: it
    deadlocks here, with the bound of each transport the run may use (`asked`: --transport or
    the topology) and the recorded sizes; None: undecided, each transport's `decide` says by what."""

    can: bool
    will: bool | None
    asked: str
    transports: list[TransportVerdict]
    cycle: str  # the zero-buffer replay's cycle in words ("" when it completes)
    nccl: str  # the NCCL release the bounds are read against
    cycle_here: str = ""  # where `will`: the cycle with the first hanging transport's bound
    where: str = ""  # path:line of the first send left waiting (the cycle_here replay, else zero's)
    chosen: str = ""  # path:line of the framework line that chose that send, where not `where`
    # The backend the run ran on where it is not NCCL (a gloo recording): these verdicts are what
    # NCCL would do with its order, not what happened (its own replay: waitfor.conditions)
    ran_on: str = ""

    def decide(self) -> str:
        """What decides an undecided `will`."""
        if len({v.will for v in self.transports}) > 1:
            which = " or ".join(v.transport.model_name for v in self.transports)
            return (f"--transport {which} (which one the cluster uses: NCCL_DEBUG=INFO prints "
                    f"'via ...' per channel)")
        return "; ".join(f"{v.transport.name}: {v.decide}" for v in self.transports if v.decide)

    def to_json(self) -> dict[str, Any]:
        return {"can_deadlock": self.can, "will_deadlock": self.will, "transport": self.asked,
                "cycle": self.cycle, "cycle_here": self.cycle_here, "where": self.where,
                "chosen": self.chosen,
                "nccl": self.nccl, "ran_on": self.ran_on or None,
                "decide": self.decide() if self.will is None else None,
                "transports": [v.to_json() for v in self.transports]}


def deadlock(replay: Callable[[Conditions], Analysis], conditions: Conditions,
             torch_version: str | None = None) -> Deadlock:
    """The two verdicts on the order `replay` replays (under `conditions`' init and coalescing).

    Per transport, two replays bracket the truth: one where only sends up to `completes_bytes`
    complete unmatched (if it completes, the order completes), one where every send below
    `hangs_bytes` does (if it hangs, the order hangs); a larger buffer never adds a hang.
    """
    asked = conditions.transport  # --transport, or what the run's layout gives
    runs: dict[int, Analysis] = {}

    def hangs(buffer: int, transport: str) -> Analysis:
        if buffer not in runs:
            runs[buffer] = replay(replace(conditions, buffer_bytes=buffer, transport=transport))
        return runs[buffer]

    zero = hangs(0, ZERO_BUFFER)
    verdicts = []
    here: Analysis | None = None
    for t in conditions.bounds or candidates(asked):
        if not zero.hang:
            verdicts.append(TransportVerdict(t, False, "completes with no send buffered"))
            continue
        low = hangs(t.completes_bytes, t.model_name)
        if not low.hang:
            verdicts.append(TransportVerdict(
                t, False, f"completes: no send that must wait exceeds the "
                          f"{size_words(t.completes_bytes)} it completes unmatched"
                          + (f" ({t.basis})" if t.log else "")))
            continue
        high = hangs(t.hangs_bytes - 1 if t.hangs_bytes else 1 << 62, t.model_name)
        if high.hang:
            here = here or low
            verdicts.append(TransportVerdict(t, True, (
                f"hangs even if every send below {size_words(t.hangs_bytes)} completed "
                f"unmatched ({t.basis})" if t.hangs_bytes else
                "hangs whatever the transport buffers")))
            continue
        waiting = sorted({o.op.nbytes for r in low.ranks.values() for o in r.ops
                          if o.state == "blocked" and o.op.kind == "send"})
        between = ", ".join(size_words(n) for n in waiting) or "the sends left waiting"
        if t.hangs_bytes is None:
            why = (f"{between} > the {size_words(t.completes_bytes)} seen to complete; nothing "
                   "larger was measured")
            decide = "a measurement of larger sends (reports/glm5.1-pp-hang/gpu/run.sh)"
        else:
            why = (f"{between} between the {size_words(t.completes_bytes)} that completes and "
                   f"the {size_words(t.hangs_bytes)} that hangs ({t.basis})")
            decide = (f"the channels that serve each peer ({size_words(t.per_channel)} each; "
                      "NCCL_DEBUG=INFO's 'Channel xx/yy ... via' lines)" if t.per_channel else
                      "what the NCCL log leaves open: the P2P chunk ('P2P Chunksize set to N', "
                      "NCCL_DEBUG_SUBSYS=INIT) or channels per peer that differ between its "
                      "ranks" if t.log else
                      "a measurement on the cluster (p2paudit repro fallback-1f1b --size)")
        verdicts.append(TransportVerdict(t, None, why, decide))
    outcomes = {v.will for v in verdicts}
    will = outcomes.pop() if len(outcomes) == 1 else None
    shown = here if will and here else zero
    return Deadlock(zero.hang, will, asked, verdicts, zero.cycle, nccl_words(torch_version),
                    here.cycle if will and here else "", *_first_blocked_send(shown))


def _first_blocked_send(a: Analysis) -> tuple[str, str]:
    """(where, chosen) of the first send left waiting."""
    return next(((o.op.where, o.op.chosen) for r in a.ranks.values() for o in r.ops
                 if o.state == "blocked" and o.op.kind == "send" and o.op.where), ("", ""))
