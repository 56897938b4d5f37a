"""What a trace says of its own completeness: ranks that left no evidence (undecided: what the
run did there is not known), processes that died of an exception (`run-crashed`: the cause,
which the ranks left waiting on them are consequences of), ops that raised and ranks whose
process never closed its file (findings: the run crashed, whatever its op order says).

Missing evidence is never CLEAN (MUST reports "incomplete" when a process's events are missing):
the join puts `undecided_evidence` in `run.undecided`, which the verdict lists with what decides
each, and `stopped_findings` among the findings.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from auditor.analysis import peerend
from auditor.analysis.causes import first_sentence
from auditor.dynamic import callsite
from auditor.dynamic.rankfile import RankTrace
from auditor.dynamic.trace import FILE_CUT, Trace, merge_spans, span_words
from auditor.findings import Finding

EXAMPLES = 4  # ranks described one by one in a message
ERROR_SHOWN = 200  # characters of an exception's message a headline quotes


# What gives the whole of a run whose rank file ends early, by why it does: the `off` line's
# reason (its `error` is free text: an internal error's message may name a full disk it never
# met), or a file the reader found cut (trace: FILE_CUT). Any other reason: UNKNOWN_STOP.
STEP_BY_REASON = {
    "file size limit": "`p2paudit record` again without the file size limit (`ulimit -f "
                       "unlimited` in the shell that starts the job)",
    "disk full": "`p2paudit record` again with --out on a filesystem with room (df -h)",
    FILE_CUT: "the rank files whole, copied once the run has ended (or `p2paudit record` again)",
}
UNKNOWN_STOP = "fix the recorder error the trace names, then `p2paudit record` again"


def undecided_evidence(trace: Trace) -> list[dict[str, str]]:
    """{what, decide} for each gap in the evidence: ranks of the run without a file or without an
    event, then ranks whose recorder stopped (`phase: "off"`)."""
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
    stopped = {r: rt for r, rt in trace.ranks.items() if rt.stopped is not None}
    if stopped:
        out.append(_incomplete(stopped))
    return out


def _incomplete(stopped: dict[int, RankTrace]) -> dict[str, str]:
    """Ranks whose file ends early: where each ends, why, and what gives the whole run for
    that reason."""
    by_why: dict[str, list[str]] = {}
    for rank, rt in stopped.items():
        by_why.setdefault(str(rt.stopped), []).append(f"rank {rank} at {rt.path.name}:{rt.stopped_line}")
    steps = dict.fromkeys(STEP_BY_REASON.get(rt.stopped_reason, UNKNOWN_STOP)
                          for rt in stopped.values())
    where = "; ".join(f"{why}: {', '.join(at)}" for why, at in by_why.items())
    return {"what": f"what rank(s) {', '.join(map(str, stopped))} did after their trace ends: the "
                    f"trace is incomplete ({where}); the wait-for replay and the send/receive "
                    "counts judge nothing past the shortest common recorded prefix",
            "decide": "; ".join(steps)}


def evidence_complete(trace: Trace) -> bool:
    """Every rank of the run left events, and every process closed its file."""
    return not trace.no_evidence() and not any(rt.unclosed for rt in trace.ranks.values())


# What a crash explains (analysis.causes): ops that raised on a connection its process closed,
# the partners left waiting in an op, the replay's cycle and count mismatch through the
# exchanges the crash cut short on one side.
CRASH_EXPLAINS = ("run-op-raised", "run-stopped-in-op", "wait-for-cycle", "rank-file-not-closed",
                  "p2p-count-mismatch")


def crash_finding(trace: Trace, ends: peerend.Ends | None = None) -> Finding | None:
    """`run-crashed`: processes that died of an uncaught exception (their `exception` lines),
    the first by wall clock leading, with what the other ranks were doing then (waiting in an
    op, ended by a signal): the consequences. Where every one of them raised because a peer had
    ended (`ends`, peerend.read), the crash is that end's consequence and explains nothing."""
    crashed = {r: rt.crash for r, rt in trace.ranks.items() if rt.crash is not None}
    if not crashed:
        return None
    ends = ends if ends is not None else peerend.read(trace)
    lost = {x.rank: x.peer for x in ends.losses}
    ended = set(ends.peers) | ({ends.first} if ends.first is not None else set())

    def when(rank: int) -> float:
        rt = trace.ranks[rank]
        return float(rt.meta.get("wall0") or 0) + float(crashed[rank].get("t") or 0)

    first = min(crashed, key=lambda r: (when(r), r))
    exc = crashed[first]
    at = exc.get("at") or {}
    where = f"{at['path']}:{at.get('line')}" if at.get("path") else ""
    raised = exc.get("raised") or {}
    # a recorder's own frame (traces of recorders before ending._frames skipped it) is no line
    # of the program
    inside = (f" (raised in {raised['path']}:{raised.get('line')})"
              if raised.get("path") and not callsite.recorder_path(raised["path"]) else "")
    others = sorted(set(crashed) - {first})
    same = [r for r in others if crashed[r].get("error") == exc.get("error")]
    who = (f"rank(s) {_words(dict.fromkeys([first, *same]))}" if same else f"rank {first}")
    error = str(exc.get("error"))
    error = error if len(error) <= ERROR_SHOWN else error[:ERROR_SHOWN - 3].rstrip() + "..."
    head = (f"{who} raised {error}" + (f" at {where}" if where else "")
            + (f" (rank {first} first)" if same else ""))
    after = []
    for rank in [r for r in others if r not in same][:EXAMPLES]:
        other = crashed[rank]
        site = other.get("at") or {}
        line = f" at {site.get('path')}:{site.get('line')}" if site.get("path") else ""
        raised_op = trace.ranks[rank].raised[-1:]  # the op it raised in, if one did
        in_op = (f" in {raised_op[0].get('api')}" + (f" with rank {raised_op[0]['peer']}"
                                                     if raised_op[0].get("peer") is not None else "")
                 if raised_op else "")
        after.append(f"rank {rank} then raised {other.get('type') or 'an exception'}{in_op}{line}")
    waiting = {r: rt.pending()[0] for r, rt in trace.ranks.items()
               if r not in crashed and r not in ended and rt.pending()}
    for rank in sorted(waiting)[:EXAMPLES]:
        op = waiting[rank]
        peer = f" with rank {op['peer']}" if op.get("peer") is not None else ""
        site = op.get("site") or {}
        line = f" ({site.get('path')}:{site.get('line')})" if site.get("path") else ""
        after.append(f"rank {rank} was left waiting in {op.get('api')}{peer}{line}")
    signalled = sorted(r for r, rt in trace.ranks.items()
                       if (rt.exit or {}).get("how") == "signal" and r not in ended)
    if signalled:
        name = trace.ranks[signalled[0]].exit.get("signal")  # type: ignore[union-attr]
        after.append(f"rank(s) {_words(dict.fromkeys(signalled))} then ended by {name}")
    in_flight = sum(len(trace.ranks[r].open_ops) for r in crashed)
    headline = head + (f"; {'; '.join(after)} ({'a consequence' if len(after) == 1 else 'consequences'})"
                       if after else "")
    # a lead means every crash raised on a lost connection (peerend.read): each follows from the
    # lead's end, directly or through the rank whose crash closed its connection
    consequence = ends.lead is not None
    fix = ("the exception is the cause: read the traceback of rank "
           f"{first} (its stderr) at {where or 'the line it names'}{inside}"
           + ("; the other ranks stopped because it did" if after else ""))
    if consequence:
        fix = (f"rank {first}'s error follows from rank {lost.get(first, ends.lead)}'s end (its "
               "connection closed): find why that rank ended, the cause above")
    return Finding(
        "run-crashed", "error",
        f"the run crashed: {headline}. The {in_flight} op(s) left open on the crashed rank(s) "
        "were in flight when their process died, not a hang",
        fix=fix,
        where=where,
        detail={"headline": f"CRASHED: {headline}",
                "explains": [] if consequence else list(CRASH_EXPLAINS),
                "crashed": {str(r): {k: e.get(k) for k in ("error", "type", "thread", "at",
                                                           "raised", "t")}
                            for r, e in crashed.items()},
                "first": first,
                "waiting": {str(r): _op(op) for r, op in waiting.items()},
                "signalled": signalled})


def thread_findings(trace: Trace) -> list[Finding]:
    """`thread-raised` (warning): a thread other than the main one died of an exception; its
    process went on, and may wait forever for what that thread would have done."""
    died = {r: [e for e in rt.exceptions if not e.get("main")] for r, rt in trace.ranks.items()}
    died = {r: threads for r, threads in died.items() if threads}
    if not died:
        return []
    rank = min(died)
    first = died[rank][0]
    at = first.get("at") or {}
    where = f"{at['path']}:{at.get('line')}" if at.get("path") else ""
    return [Finding(
        "thread-raised", "warning",
        f"a thread died of an exception on rank(s) {_words(died)}; first: rank {rank}'s thread "
        f"{first.get('thread')!r}: {first.get('error')}" + (f" at {where}" if where else "")
        + "; its process went on without it",
        fix="an op that thread would have issued, or a result it would have set, never comes: "
            "where the run then waits, this exception is the cause",
        where=where,
        detail={"threads": {str(r): [{k: e.get(k) for k in ("thread", "error", "at", "t")}
                                     for e in threads[:EXAMPLES]]
                            for r, threads in died.items()}})]


def stopped_findings(trace: Trace, ends: peerend.Ends | None = None) -> list[Finding]:
    """A run that crashed: processes that died of an exception, ops that ended in an exception,
    and processes that never closed their file (killed, or still running). Each stops the run
    whatever its op order says. A process that ended first, without an exit record or by a
    signal, under its peers' connection errors (`ends`, peerend.read) is their cause."""
    ends = ends if ends is not None else peerend.read(trace)
    peers = ends.peers
    crash = crash_finding(trace, ends)
    out = [crash] if crash is not None else []
    out += thread_findings(trace)
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
    # a file whose recording stopped (an `off` line, or ops its peers saw complete are not in it)
    # says nothing of how its process ended: its unclosed end is no kill
    unclosed = {r: rt.unclosed for r, rt in trace.ranks.items() if rt.unclosed and rt.stopped is None}
    if unclosed:
        rank = min(unclosed)
        lead = ends.lead if ends.lead in unclosed else None
        unordered = (f"; the files cannot order its end against the other ranks' ({ends.unordered}): "
                     "torchrun's \"Root Cause\" (first observed failure) names the rank that failed "
                     "first" if ends.unordered else "")
        out.append(Finding(
            "rank-file-not-closed", "error",
            f"the process of rank(s) {_words(unclosed)} stopped without closing its trace file "
            f"(rank {rank}: {unclosed[rank]}): killed (a crash, an OOM kill, the launcher "
            f"ending it), or still running; the run did not finish there{unordered}",
            fix="find why that process stopped: its stderr, the launcher's exit status, dmesg "
                "for an OOM kill; a run still in progress: report it once it has ended"
                if lead is None else _end_fix(trace, lead, ends),
            detail={"unclosed": {str(r): why for r, why in unclosed.items()},
                    **({} if lead is None else _end_detail(trace, lead, ends))}))
    # under a rank that ended first, the signals that ended its peers are the launcher's answer
    signalled = {r: how for r in peers if (how := ended_by(trace.ranks[r])) is not None} \
        if ends.first is None else {}
    if signalled:
        rank = min(signalled)
        out.append(Finding(
            "rank-ended-by-signal", "error",
            f"the process of rank(s) {_words(signalled)} was ended by a signal or an error exit "
            f"(rank {rank}: {signalled[rank]}) before the ops of its peers raised on the "
            "connection it closed",
            fix=_end_fix(trace, rank, ends),
            detail={"signalled": {str(r): s for r, s in signalled.items()},
                    **_end_detail(trace, rank, ends)}))
    return out or _abnormal_end(trace, ends)


def _abnormal_end(trace: Trace, ends: peerend.Ends) -> list[Finding]:
    """A run where no op raised, no process crashed and every file closed, yet a process ended
    by an error exit (`sys.exit(3)`) or by a signal it did not handle: no normal end, never
    CLEAN. The first such end by wall clock leads, the waits and signals of the others after it
    are its consequences. Signals alone with a rank left inside an op are the hang's
    (run-stopped-in-op) to say: the launcher or a time limit ending a wait."""
    abnormal = {r: how for r, rt in trace.ranks.items() if (how := ended_by(rt)) is not None}
    errored = any(peerend.error_exit(trace.ranks[r]) is not None for r in abnormal)
    if not abnormal or not errored and any(rt.pending() for rt in trace.ranks.values()):
        return []
    rank = min(abnormal, key=lambda r: (peerend.end_wall(trace.ranks[r]) or math.inf, r))
    lead = dataclasses.replace(ends, first=rank)
    return [Finding(
        "rank-ended-by-signal", "error",
        f"the process of rank(s) {_words(abnormal)} was ended by a signal or an error exit "
        f"(rank {rank}: {abnormal[rank]}) with no op raised: the run did not end normally",
        fix=_end_fix(trace, rank, lead),
        detail={"signalled": {str(r): s for r, s in abnormal.items()},
                **_end_detail(trace, rank, lead)})]


def _end_detail(trace: Trace, peer: int, ends: peerend.Ends) -> dict[str, Any]:
    """The headline and `explains` of the finding that says how `peer` ended first: where it
    was, then its consequences by wall clock: the errors of the ranks left talking to it, and
    where it ended before every other rank (`ends.first`) their waits and signals too."""
    rt = trace.ranks[peer]
    how = ("by " + str(ended_by(rt)) if rt.unclosed is None else
           "without an exit record (killed, or ended past Python's exit handlers: os._exit, "
           "an abort)")
    inside = ", outside any op"
    if rt.pending():
        inside = " in " + _waiting(rt.pending()[0])
    then = list(_after(trace, peer, ends).values())
    after = (f"; {'; '.join(then)} ({'a consequence' if len(then) == 1 else 'consequences'})"
             if then else "")
    cut = ""
    if ends.cut and ends.first == peer:
        c = ends.cut[0]
        cut = (f"; it left one exchange short ({c['words']}, sends at {c['send_site'] or '?'}, "
               f"receives at {c['recv_site'] or '?'}): the cause if its program ended it there "
               "(an os._exit: exit code 0 in the launcher's log), else cut by its kill")
    return {"headline": f"CRASHED: rank {peer} ended first, {how}{inside}{cut}{after}",
            "explains": ends.explains,
            "lost": {str(x.rank): x.peer for x in ends.losses}}


def ended_by(rt: RankTrace) -> str | None:
    """How a process with an exit line ended other than normally, in words: the signal, or its
    error exit's status; None for a normal end or an exception."""
    line = rt.exit or {}
    status = peerend.error_exit(rt)
    if status is not None:
        return f"its own exit with status {status} (sys.exit)"
    return str(line.get("signal")) if line.get("how") == "signal" else None


def _after(trace: Trace, peer: int, ends: peerend.Ends) -> dict[int, str]:
    """What each rank did after `peer` ended, in words, by wall clock: the op that raised on a
    lost connection; where `peer` ended first, also the op it was left waiting in and the signal
    that ended it."""
    out: dict[int, str] = {}
    lost = {x.rank: x for x in ends.losses if ends.first == peer or x.peer == peer}
    for rank, rt in sorted(trace.ranks.items()):
        if rank == peer:
            continue
        if rank in lost:
            out[rank] = f"rank {rank} then raised {raised_words(lost[rank].op)}"
        elif ends.first == peer:
            signal = (rt.exit or {}).get("signal") if (rt.exit or {}).get("how") == "signal" else None
            parts = ([f"was left waiting in {_waiting(rt.pending()[0])}"] if rt.pending() else []) + (
                [f"ended by {signal}"] if signal else [])
            if parts:
                out[rank] = f"rank {rank} " + (", then ".join(parts) if rt.pending() else "then " + parts[0])
    return dict(sorted(out.items(), key=lambda kv: (peerend.end_wall(trace.ranks[kv[0]]) or 0, kv[0]))
                [:EXAMPLES])


def raised_words(op: dict[str, Any]) -> str:
    """An op that raised on a lost connection, in words: its error, the op, its peer, its line."""
    site = op.get("site") or {}
    return (f"{first_sentence(str(op.get('error')))} in {op.get('api')}"
            + (f" with rank {op['peer']}" if op.get("peer") is not None else "")
            + (f" at {site.get('path')}:{site.get('line')}" if site.get("path") else ""))


def _waiting(op: dict[str, Any]) -> str:
    with_peer = f" with rank {op['peer']}" if op.get("peer") is not None else ""
    site = op.get("site") or {}
    return f"{op.get('api')}{with_peer}" + (f" ({site.get('path')}:{site.get('line')})" if site.get("path") else "")


def _end_fix(trace: Trace, peer: int, ends: peerend.Ends) -> str:
    """Where to look for why `peer` ended first: who sent the signal it ended by, else (no exit
    record) its stderr, the launcher's exit status and the kernel's log."""
    rt = trace.ranks[peer]
    signal = (rt.exit or {}).get("signal") if rt.unclosed is None else None
    status = peerend.error_exit(rt) if rt.unclosed is None else None
    others = _words(dict.fromkeys(_after(trace, peer, ends)))
    why = (f"rank {peer}'s program exited with status {status} (sys.exit): its stderr and the "
           "line that called it say why" if status is not None else
           f"find who sent {signal} to rank {peer} first (the scheduler's time limit or preemption, "
           "the launcher after another failure, a person)" if signal is not None else
           "its stderr (an abort message, a traceback the recorder could not write), the "
           "launcher's exit status for it (torchrun's \"Root Cause\" names its exit code or "
           "signal), dmesg (an OOM kill) and its program (an os._exit) say why it ended")
    what = ("error" if ends.first != peer else "end")
    return (f"rank {peer}'s end is the cause: {why}; the {what} of rank(s) {others} is its "
            "consequence")


def _words(ranks: dict[int, Any]) -> str:
    return span_words(merge_spans([(r, r) for r in ranks]))


def _op(e: dict[str, Any]) -> dict[str, Any]:
    return {"seq": e.get("seq"), "api": e.get("api"), "peer": e.get("peer"),
            "error": e.get("error")}
