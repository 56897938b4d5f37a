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
from dataclasses import dataclass, replace
from typing import Any

from auditor import rulebook
from auditor.analysis.waitfor.deadlock import Deadlock, deadlock
from auditor.analysis.waitfor.model import Conditions, Op
from auditor.analysis.waitfor.prefixes import closed_prefixes
from auditor.analysis.waitfor.programs import programs_from_events
from auditor.analysis.waitfor.replay import analyze
from auditor.analysis.waitfor.result import Analysis
from auditor.config.expr import UNKNOWN, compile_expr, evaluate
from auditor.config.runconfig import RunConfig
from auditor.dynamic.backends import GLOO, of_groups
from auditor.dynamic.trace import Trace
from auditor.rulebook.stages import load_rulebook

# Ops replayed in all: a prefix per rank, 32 each on 1,024 ranks (about 2 s here).
REPLAY_OPS = 32_768


@dataclass(frozen=True)
class RecordedOrder:
    programs: dict[int, list[Op]]  # each rank's head window
    totals: dict[int, int]  # each rank's op count in the whole run
    torch_version: str | None  # the scan's: the NCCL its wheel pins bounds the verdicts
    # A recording made on gloo (which never coalesces): whether torch would coalesce its batches
    # on NCCL (`nccl_coalesces`); None for an NCCL recording, or where that is unknown: then the
    # NCCL questions replay each op as it was recorded.
    nccl_coalesce: bool | None = None

    def replay(self, conditions: Conditions) -> tuple[Analysis, int]:
        """The replay of each rank's first ops (REPLAY_OPS in all), cut where no op is left
        waiting for a partner beyond another rank's cut, and the number of ops it replayed."""
        per_rank = max(1, REPLAY_OPS // max(1, len(self.programs)))
        programs = closed_prefixes(self.programs, conditions, per_rank, self.totals)
        return analyze(programs, conditions), sum(len(p) for p in programs.values())

    def deadlock(self, conditions: Conditions) -> Deadlock:
        """The two verdicts on this order over `conditions.transport` (`waitfor.deadlock`), each
        replay cut as `replay`'s; a gloo recording's batches issued as NCCL would issue them."""
        if conditions.model.runs_nccl and self.nccl_coalesce is not None:
            # gloo's own "never coalesces" says nothing of NCCL (report --transport carries it)
            conditions = replace(conditions, coalesce=self.nccl_coalesce)
        return deadlock(lambda c: self.replay(c)[0], conditions, self.torch_version)


def recorded_order(trace: Trace, doc: dict[str, Any]) -> RecordedOrder:
    """The order `trace` recorded, as the scan document `doc` reads it: its P2POp sites' roles,
    its torch release."""
    heads = {r: rt.head for r, rt in trace.ranks.items()}
    run = RunConfig.from_json(doc.get("config", {}))
    version = run.known("torch_version")  # unknown: the recorded torch decides below
    version = version if isinstance(version, str) else None
    groups = [g for rt in trace.ranks.values() for g in rt.groups]
    coalesce = None
    if of_groups(groups) is GLOO:
        said = run.value("torch_batch_coalesces")  # the scan's, from the launch's env
        recorded = next((str(rt.meta["torch"]) for rt in trace.ranks.values()
                         if isinstance(rt.meta.get("torch"), str)), None)
        # A scan that left the cluster's torch unknown keeps it unknown: a gloo recording's torch
        # is the recording machine's, not evidence of the cluster's. No scan: the recorded one.
        judged = version if run.is_unknown("torch_version") else version or recorded
        coalesce = said if isinstance(said, bool) else nccl_coalesces(judged, None)
    return RecordedOrder(programs_from_events(heads, p2p_roles(doc["sites"])),
                         {r: rt.ops for r, rt in trace.ranks.items()}, version, coalesce)


# rules/torch.toml's keys that decide, in this order, whether batch_isend_irecv coalesces.
_COALESCING_KEYS = ("torch_debug_wrapper", "torch_backend_supports_coalescing",
                    "torch_batch_coalesces")


def nccl_coalesces(torch_version: str | None, debug: str | None) -> bool | None:
    """Whether batch_isend_irecv coalesces a batch of CUDA tensors on NCCL at `torch_version`
    with TORCH_DISTRIBUTED_DEBUG=`debug` (None: unknown), as rules/torch.toml's torch-runtime
    rules decide it (the one place that does); None where they leave it open."""
    release = (torch_version or "").split("+")[0] or None
    if release is None:
        return None
    book = load_rulebook({"torch": release})
    values: dict[str, Any] = {"distributed_backend": "nccl", "pipeline_backend": "nccl", "p2p_tensor_device": "cuda",
                              "torch_version": release}
    env = {"TORCH_DISTRIBUTED_DEBUG": debug if debug is not None else UNKNOWN}
    for entry in book.entries.get("torch-runtime", []):
        if entry.framework == "torch" and entry.key in _COALESCING_KEYS:
            values[entry.key] = evaluate(compile_expr(str(entry.data["value"])),
                                         lambda n: values.get(n, UNKNOWN),
                                         lambda n: env.get(n, UNKNOWN))
    answer = values.get("torch_batch_coalesces")
    return answer if isinstance(answer, bool) else None


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
