"""What a trace says of its own completeness: ranks that left no evidence (undecided: what the
run did there is not known), ops that raised and ranks whose process never closed its file
(findings: the run crashed, whatever its op order says).

Missing evidence is never CLEAN (MUST reports "incomplete" when a process's events are missing):
the join puts `undecided_evidence` in `run.undecided`, which the verdict lists with what decides
each, and `stopped_findings` among the findings.
"""

from __future__ import annotations

from typing import Any

from auditor.dynamic.trace import Trace, merge_spans, span_words
from auditor.findings import Finding

EXAMPLES = 4  # ranks described one by one in a message


def undecided_evidence(trace: Trace) -> list[dict[str, str]]:
    """{what, decide} for each gap in the evidence: ranks of the run without a file or without an
    event. (A rank whose recorder stopped, `phase: "off"`, is the trace summary's `incomplete`.)"""
    out = []
    spans = trace.no_evidence()
    if spans:
        flight_recorder = any(rt.meta.get("source") == "flight-recorder"
                              for rt in trace.ranks.values())
        world = f" of the world of {trace.world_size}" if trace.world_size else ""
        why = [f"{trace.missing_count} with no {'dump' if flight_recorder else 'trace file'}"] \
            if trace.absent else []
        why += [f"rank {r}: {w}" for r, w in sorted(trace.silent.items())[:EXAMPLES]]
        out.append({
            "what": f"rank(s) {span_words(spans)}{world} left no evidence ({'; '.join(why)}); "
                    "the rank that hung or failed may be among them",
            "decide": "the dump of every rank (TORCH_NCCL_DUMP_ON_TIMEOUT=1 on each node, the "
                      "files gathered into one directory)" if flight_recorder else
                      "every node's trace directory gathered into one (rank-N.jsonl of each "
                      "rank), or a run recorded again"})
    return out


def evidence_complete(trace: Trace) -> bool:
    """Every rank of the run left events, and every process closed its file."""
    return not trace.no_evidence() and not any(rt.unclosed for rt in trace.ranks.values())


def stopped_findings(trace: Trace) -> list[Finding]:
    """A run that crashed: ops that ended in an exception, and processes that never closed their
    file (killed, or still running). Either stops the run whatever its op order says."""
    out = []
    raised = {r: rt.raised for r, rt in trace.ranks.items() if rt.raised}
    if raised:
        rank = min(raised)
        first = raised[rank][0]
        site = first.get("site") or {}
        where = f"{site.get('path')}:{site.get('line')}" if site.get("path") else ""
        chosen = first.get("chosen") or {}
        out.append(Finding(
            "run-op-raised", "error",
            f"{sum(map(len, raised.values()))} op(s) ended in an exception on rank(s) "
            f"{_words(raised)}; first: rank {rank}'s {first.get('api')} (seq {first.get('seq')})"
            + (f" at {where}" if where else "") + f": {first.get('error') or 'no message'}",
            fix="the exception names the cause: a peer that closed its connection died first "
                "(look for the rank that stopped before it: its stderr, the launcher's exit "
                "status, an OOM kill in dmesg)",
            where=where,
            detail={"raised": {str(r): [_op(e) for e in ops[:EXAMPLES]]
                               for r, ops in raised.items()}},
            chosen=[f"{chosen['path']}:{chosen.get('line')}"] if chosen.get("path") else []))
    unclosed = {r: rt.unclosed for r, rt in trace.ranks.items() if rt.unclosed}
    if unclosed:
        rank = min(unclosed)
        out.append(Finding(
            "rank-file-not-closed", "error",
            f"the process of rank(s) {_words(unclosed)} stopped without closing its trace file "
            f"(rank {rank}: {unclosed[rank]}): killed (a crash, an OOM kill, the launcher "
            "ending it), or still running; the run did not finish there",
            fix="find why that process stopped: its stderr, the launcher's exit status, dmesg "
                "for an OOM kill; a run still in progress: report it once it has ended",
            detail={"unclosed": {str(r): why for r, why in unclosed.items()}}))
    return out


def _words(ranks: dict[int, Any]) -> str:
    return span_words(merge_spans([(r, r) for r in ranks]))


def _op(e: dict[str, Any]) -> dict[str, Any]:
    return {"seq": e.get("seq"), "api": e.get("api"), "peer": e.get("peer"),
            "error": e.get("error")}
