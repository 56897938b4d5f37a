"""A recorded run's op order as the wait-for replay takes it, for every reader of one run: the
join's report, the drawing of the trace's head ops (`headops`) and simulate's prediction judge
the very same replay.

Each rank's head window is its program, each P2POp's op tagged with the neighbour its peer
expression names (`p2p_roles`: how a swapped pair is told from a matched one). A replay is cut
to REPLAY_OPS ops in all, at closed prefixes (`waitfor.prefixes`): lazy-init deadlocks happen in
the first exchanges, and a cycle found in such a prefix is a cycle of the whole run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from auditor import rulebook
from auditor.analysis.waitfor.deadlock import Deadlock, deadlock
from auditor.analysis.waitfor.model import Conditions, Op
from auditor.analysis.waitfor.prefixes import closed_prefixes
from auditor.analysis.waitfor.programs import programs_from_events
from auditor.analysis.waitfor.replay import Analysis, analyze
from auditor.dynamic.trace import Trace

# Ops replayed in all: a prefix per rank, 32 each on 1,024 ranks (about 2 s here).
REPLAY_OPS = 32_768


@dataclass(frozen=True)
class RecordedOrder:
    programs: dict[int, list[Op]]  # each rank's head window
    totals: dict[int, int]  # each rank's op count in the whole run
    torch_version: str | None  # the scan's: the NCCL its wheel pins bounds the verdicts

    def replay(self, conditions: Conditions) -> tuple[Analysis, int]:
        """The replay of each rank's first ops (REPLAY_OPS in all), cut where no op is left
        waiting for a partner beyond another rank's cut, and the number of ops it replayed."""
        per_rank = max(1, REPLAY_OPS // max(1, len(self.programs)))
        programs = closed_prefixes(self.programs, conditions, per_rank, self.totals)
        return analyze(programs, conditions), sum(len(p) for p in programs.values())

    def deadlock(self, conditions: Conditions) -> Deadlock:
        """The two verdicts on this order over `conditions.transport` (`waitfor.deadlock`), each
        replay cut as `replay`'s."""
        return deadlock(lambda c: self.replay(c)[0], conditions, self.torch_version)


def recorded_order(trace: Trace, doc: dict[str, Any]) -> RecordedOrder:
    """The order `trace` recorded, as the scan document `doc` reads it: its P2POp sites' roles,
    its torch release."""
    heads = {r: rt.head for r, rt in trace.ranks.items()}
    version = doc.get("config", {}).get("effective", {}).get("torch_version")
    return RecordedOrder(programs_from_events(heads, p2p_roles(doc["sites"])),
                         {r: rt.ops for r, rt in trace.ranks.items()},
                         version if isinstance(version, str) else None)


def p2p_roles(sites: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    """(path, line) of each P2POp site -> the neighbour it addresses, as its peer expression
    names it (rules/megatron-core.toml [p2p_roles])."""
    pattern = re.compile(rulebook.load("megatron-core").section("p2p_roles")["peer_pattern"])
    out = {}
    for s in sites:
        if s.get("api") == "P2POp":
            m = pattern.search(s.get("peer") or "")
            if m:
                out[(s["path"], s["line"])] = m.group(1)
    return out
