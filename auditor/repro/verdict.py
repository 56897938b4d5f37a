"""The one line a reproducer run ends with: where every rank got to, and whether the wait-for
model predicted it. Written to be pasted into a bug report as it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.analysis.waitfor.model import Conditions, Op, communicator_for
from auditor.analysis.waitfor.replay import analyze
from auditor.analysis.waitfor.result import Analysis
from auditor.analysis.waitfor.sizes import size_words
from auditor.dynamic.backends import backend
from auditor.errors import EXIT_FINDINGS, EXIT_OK
from auditor.repro.plan import ISSUE_BATCH, ReproPlan
from auditor.repro.progress import DONE, ISSUING, PENDING


@dataclass
class Outcome:
    status: str  # completed | hung | failed
    line: str
    exit_code: int
    seconds: float | None
    model: Analysis | None
    states: dict[int, dict[str, Any] | None]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "verdict": self.line, "seconds": self.seconds,
                "model": self.model.to_json() if self.model else None, "ranks": self.states}


def judge(plan: ReproPlan, states: dict[int, dict[str, Any] | None], killed_at: float | None) -> Outcome:
    """`killed_at`: when the launcher killed the run at its time limit (None: it ended itself)."""
    t_ops = [s["t_ops"] for s in states.values() if s and s.get("t_ops")]
    start = min(t_ops) if t_ops else None
    coalesced = _observed_coalescing(states)
    conditions = plan.conditions(coalesced)
    model = analyze(plan.programs, conditions) if conditions is not None else None

    if all(s and s["phase"] == "done" for s in states.values()):
        seconds = max(s["t_done"] for s in states.values() if s) - start
        wrong = [(r, i) for r, s in states.items() if s for i in s["wrong_data"]]
        status = "failed" if wrong else "completed"
        body = f"completed in {seconds:.3f} s" if seconds < 1 else f"completed in {seconds:.1f} s"
        if wrong:
            rank, index = wrong[0]
            body += (f" but rank {rank} received wrong data in its "
                     f"{_op_words(plan, plan.programs[rank][index])}")
    else:
        blocked = [_rank_words(plan, rank, s) for rank, s in states.items()
                   if not (s and s["phase"] == "done")]
        stuck = any(s and s["phase"] in ("init", "ops") for s in states.values())
        status = "hung" if stuck else "failed"
        ends = [killed_at] if killed_at else [s.get("t_error") for s in states.values() if s]
        end = max([t for t in ends if t] or [start or 0.0])
        seconds = end - start if start else None
        after = f" after {seconds:.0f} s" if seconds is not None else ""
        body = ("HUNG" if stuck else "FAILED") + f"{after}: " + "; ".join(blocked)
    parts = [f"{plan.title}: {body}"]
    if plan.issue == ISSUE_BATCH and coalesced is not None:
        parts.append("batch_isend_irecv " + ("coalesced" if coalesced else "ran op by op")
                     + " (observed)")
    if model is not None and conditions is not None:  # a model only where there are conditions
        verdict = "hang" if model.hang else "no hang"
        if status in ("completed", "hung"):
            agrees = model.hang == (status == "hung")
            parts.append(f"wait-for model ({conditions.transport}, "
                         f"{size_words(conditions.buffer_bytes)} buffered): {verdict}, "
                         + ("agrees" if agrees else "DISAGREES"))
        else:
            parts.append(f"wait-for model: {verdict}")
    line = "; ".join(parts) + (f" [{plan.note}]" if plan.note else "")
    return Outcome(status, line, EXIT_OK if status == "completed" else EXIT_FINDINGS,
                   seconds, model, states)


def _observed_coalescing(states: dict[int, dict[str, Any] | None]) -> bool | None:
    seen = {ran for s in states.values() if s for ran in s.get("coalesced", {}).values()}
    return seen.pop() if len(seen) == 1 else None


def _op_words(plan: ReproPlan, op: Op) -> str:
    direction = "to" if op.kind == "send" else "from"
    words = f"{op.api} {direction} {op.peer} ({size_words(op.nbytes)})"
    if plan.issue == ISSUE_BATCH and op.batch is not None:
        words = f"batch_isend_irecv([{words}])"
    return words + (f" in {op.call}" if op.call and op.call != "batch_isend_irecv" else "")


def _rank_words(plan: ReproPlan, rank: int, state: dict[str, Any] | None) -> str:
    if state is None:
        return f"rank {rank} never started"
    if state["phase"] == "init":
        return f"rank {rank} blocked in init_process_group"
    program = plan.programs[rank]
    ops = state["ops"]
    issuing = [i for i, o in enumerate(ops) if o and o["state"] == ISSUING]
    pending = [i for i, o in enumerate(ops) if o and o["state"] == PENDING]
    verb = "failed" if state["phase"] == "error" else "blocked"
    if issuing:
        i = issuing[0]
        words = f"rank {rank} {verb} in {_op_words(plan, program[i])}"
        comm = _communicator(plan, program[i])
        first_use = all(_communicator(plan, program[j]) != comm for j in range(i)
                        if ops[j] is not None)
        if backend(plan.backend).lazy_communicators and plan.init == "lazy" and first_use:
            words += f" (lazy creation of communicator {comm})"
    elif pending:
        heads: dict[str, int] = {}
        for i in pending:
            heads.setdefault(_communicator(plan, program[i]), i)
        words = f"rank {rank} {verb} in " + ", ".join(
            f"{_op_words(plan, program[i])} on communicator {c}" for c, i in heads.items())
        behind = [i for i in pending if i not in heads.values()]
        if behind:
            words += " with " + ", ".join(_op_words(plan, program[i]).split(" in ")[0]
                                          for i in behind) + " queued behind"
    elif state["phase"] == "error":
        words = f"rank {rank} failed"
    else:
        done = sum(1 for o in ops if o and o["state"] == DONE)
        words = f"rank {rank} waiting after {done} completed ops"
    if state.get("error"):
        words += f": {state['error']}"
    return words


def _communicator(plan: ReproPlan, op: Op) -> str:
    conditions = plan.conditions() or Conditions(plan.init)  # plain gloo: what NCCL would use
    batched = plan.issue == ISSUE_BATCH and op.batch is not None
    return communicator_for(op, conditions, batched).name
