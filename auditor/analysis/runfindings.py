"""The findings of a joined run: static misses, unbatched ops under batch_p2p_comm=True, the
wait-for replay's cycle or conditional hang, mismatched pairs; each with the ranks and lines it
is about and what fixes it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from auditor.analysis.peerend import Ends
from auditor.analysis.runevidence import raised_words
from auditor.analysis.uses import Key, Use
from auditor.analysis.waitfor.deadlock import Deadlock
from auditor.analysis.waitfor.model import SEND_APIS, Conditions
from auditor.analysis.waitfor.sizes import size_words
from auditor.config.runconfig import RunConfig
from auditor.dynamic.backends import backend
from auditor.findings import Finding

EXAMPLES = 8  # ranks or pairs named in a finding's message
CHOSEN_SHOWN = 4  # framework lines named as choosing one site's ops, the most frequent first


def _ranks_words(ranks: list[int]) -> str:
    """`0-3, 8, 10-11`: rank lists as a person writes them."""
    ranks = sorted(set(ranks))
    parts, start = [], None
    for i, r in enumerate(ranks):
        if start is None:
            start = r
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            parts.append(str(start) if start == r else f"{start}-{r}")
            start = None
    return ", ".join(parts)


def run_findings(uses: dict[Key, Use], mapped: dict[Key, str], by_id: dict[str, dict[str, Any]],
              run: dict[str, Any], config: RunConfig) -> list[Finding]:
    out: list[Finding] = []
    inside = [m for m in run["misses"] if m["in_targets"]]
    outside = [m for m in run["misses"] if not m["in_targets"]]
    if inside:
        first = inside[0]
        out.append(Finding(
            "static-miss", "error",
            f"{len(inside)} line(s) of the scanned sources issued P2P ops the scan did not predict; "
            f"e.g. {first['path']}:{first['line']} {first['api']} in {first['function']}, "
            f"{first['calls']} call(s): {first['why']}. Do not trust the scan's 'unreachable' here.",
            fix="report it with this file attached (p2paudit report --format json); meanwhile "
                "treat every site of that function as reachable",
            site_ids=[m["site_id"] for m in inside if m["site_id"]],
            where=f"{first['path']}:{first['line']}",
            detail={"misses": inside[:50]}))
    if outside:
        first = outside[0]
        out.append(Finding(
            "unscanned-p2p", "warning",
            f"{len(outside)} line(s) issued P2P ops of code outside the scanned sources; e.g. "
            f"{first['path']}:{first['line']} {first['api']} in {first['function']}: {first['why']}",
            fix="add the package or script they are in as a --target of the scan",
            where=f"{first['path']}:{first['line']}", detail={"misses": outside[:50]}))

    if config.value("batch_p2p_comm") is True:
        for key, u in uses.items():
            for label, per_rank in u.unbatched.items():
                out.append(_unbatched_finding(key, u, label, per_rank, mapped, by_id, config))

    if run["pairs"]:
        first = run["pairs"][0]
        comms = "; ".join(f"{c} ({', '.join(h)})" for c, h in first["communicators"].items())
        examples = ", ".join(f"{a}-{b}" for a, b in (p["ranks"] for p in run["pairs"][:EXAMPLES]))
        # What the recorded run used decides: a gloo recording replayed with --transport still
        # only says what NCCL *would* do.
        on_gloo = "nccl" not in (run["trace"].get("backends") or [])
        out.append(Finding(
            "pair-on-two-communicators", "warning" if on_gloo else "error",
            f"{len(run['pairs'])} pipeline neighbour pair(s) "
            f"{'would talk under NCCL' if on_gloo else 'talk'} over two or more NCCL "
            f"communicators ({run['waitfor']['conditions']['init']} init): ranks "
            f"{first['ranks'][0]} and {first['ranks'][1]} use {comms}. Each communicator is "
            "created at its first use by a rendezvous of all its members; ranks that reach the "
            f"creations in different orders wait on each other. Pairs: {examples}"
            + (" ..." if len(run["pairs"]) > EXAMPLES else ""),
            fix="send every P2P op between two pipeline stages over one group and one path "
                "(all batched on the pipeline group), or create the communicators eagerly "
                "(init_process_group(device_id=...))",
            detail={"pairs": run["pairs"][:50]}))

    pending = run["trace"]["pending"]
    if pending:
        stuck = sorted(int(r) for r in pending)
        out.append(Finding(
            "run-stopped-in-op", "error",
            f"{len(stuck)} rank(s) stopped inside a P2P or collective op that never completed "
            f"(ranks {_ranks_words(stuck)}); the timeline shows where each one was",
            fix="read the wait-for cycle and the timeline: the first op that differs between "
                "neighbours is the one to change",
            detail={"pending": pending}))
    return out


# How a stopped run's cycle begins: a headline that says how the run stopped says it once.
CYCLE_STOPPED = "the run stopped, and "


def replay_findings(wf: dict[str, Any], deadlock: Deadlock | None, ends: Ends | None = None
                    ) -> list[Finding]:
    """What the wait-for replay adds, by what the run did; a mismatch between a rank and the
    peer whose end its error follows from explains both (`ends`, analysis.peerend).

    - `wait-for-cycle` (error): the run stopped in an op (or an op raised) and the replay finds
      the cycle of waits: the deadlock, explained.
    - `replay-would-hang` (warning): every op completed, yet under NCCL over the transport asked
      the same order hangs with these sizes (*will deadlock there*): a hang waiting for that
      setting, not one that happened.
    - `replay-can-hang` (warning): every op completed; the order deadlocks when no send is
      buffered (*can deadlock*), and whether the transport asked buffers these sizes is not known.
    - `replay-disagrees-with-run` (warning): every op of a gloo run completed, yet the gloo model
      says it hangs: the model is wrong about this run; nothing is concluded from it.
    - `p2p-mismatch` (error): a send and the receive it pairs with differ in size or dtype.
    - `p2p-count-mismatch` (error): in one exchange a rank posts more receives from a peer than
      the peer sends it (or the other way round): the cause of the cycle, with both lines.
    """
    fix = ("make both sides of each exchange reach the same communicator and the same op order: "
           "batch the exchange (batch_isend_irecv that coalesces) or order sends and receives "
           "even/odd")
    out: list[Finding] = []
    ends = ends or Ends()
    # The cycle first: what the stopped ranks waited on leads the counts beside it.
    if not wf["run_completed"] and wf["cycle"]:
        out.append(Finding(
            "wait-for-cycle", "error",
            f"{CYCLE_STOPPED}its recorded op order deadlocks under "
            f"{Conditions(**wf['conditions']).words()}: {wf['cycle']}",
            fix=fix, detail={"blocked": wf["blocked"][:EXAMPLES]}))
    if wf.get("mismatched_pairs"):
        out.append(_mismatch_finding(wf["mismatched_pairs"]))
    if wf.get("count_mismatches"):
        out.append(_count_finding(wf["count_mismatches"], wf["cycle"]))
    for f in out:
        if ends.above_explains(f.kind):
            f.detail["explains"] = [*f.detail.get("explains", ()), *ends.above_explains(f.kind)]
        if f.kind == "p2p-count-mismatch" and wf["count_mismatches"][0]["short"] in ends.exited:
            f.detail["headline"] = _exited_headline(wf["count_mismatches"][0], ends)
    if not wf["run_completed"]:
        return out
    assert deadlock is not None  # asked of every order a recorder did not cut (a cut run never completed)
    if wf["hang"] and not backend(wf["conditions"]["backend"]).runs_nccl:
        out.append(Finding(
            "replay-disagrees-with-run", "warning",
            f"every recorded op completed, yet the gloo model of the wait-for replay says this "
            f"order hangs ({wf['cycle'] or wf['blocked'][0]}): the model is wrong about this run, "
            "so its other answers are not to be trusted here",
            fix="report it with the trace attached", detail={"blocked": wf["blocked"][:EXAMPLES]}))
    if deadlock.will:
        out.append(_would_hang(wf["conditions"], deadlock, fix))
    elif deadlock.will is None and deadlock.can:
        out.append(Finding(
            "replay-can-hang", "warning",
            f"every recorded op completed; this order deadlocks when no send is buffered "
            f"({deadlock.cycle}), and whether NCCL over {deadlock.asked} buffers these sizes "
            f"is not known: " + "; ".join(f"{v.transport.name}: {v.why}"
                                         for v in deadlock.transports),
            fix=fix + f". What decides it: {deadlock.decide()}", where=deadlock.where,
            detail={"deadlock": deadlock.to_json()}, chosen=_chosen(deadlock.chosen)))
    return out


def _mismatch_finding(pairs: list[dict[str, Any]]) -> Finding:
    """Sends and receives paired in FIFO order per communicator whose sizes or dtypes differ."""
    first = pairs[0]
    a, b = first["send"], first["recv"]

    def side(x: dict[str, Any]) -> str:
        role = f" {'to' if x['api'] in SEND_APIS else 'from'} its {x['role']}" \
            if x.get("role") else ""
        return (f"rank {x['rank']}'s {x['api']}{role} of {size_words(x['bytes'])}"
                f"{' ' + x['dtype'] if x['dtype'] else ''}"
                f"{' at ' + x['site'] if x['site'] else ''}"
                f"{' (chosen at ' + x['chosen'] + ')' if x.get('chosen') else ''}")
    if first.get("collective"):
        return Finding(
            "p2p-mismatch", "error",
            f"the members of one {first['collective']} disagree in {first['what']}: {side(a)} against "
            f"{side(b)} on {first['communicator']} (every member passes the same shape and dtype: the "
            "data arrives wrong, silently, or the op never completes)",
            fix="give every member the same shape and dtype (cast the sender's tensor, e.g. `.float()`)",
            where=b["site"] or a["site"] or "", detail={"pairs": pairs[:EXAMPLES]})
    return Finding(
        "p2p-mismatch", "error",
        f"{len(pairs)} send/receive pair(s) disagree in {first['what']}: {side(a)} is received by "
        f"{side(b)} on {first['communicator']} (sends and receives between two ranks pair up in "
        "the order they are issued on a communicator: the receiver gets other bytes than were "
        "sent, silently, or the pair never completes)",
        fix="give both sides the same shape and dtype (a receive buffer reused across steps keeps "
            "its old dtype); where one batch sends to the same peer twice (PP=2 with a virtual "
            "pipeline), order each side's ops so they pair (send_prev with recv_next), or use "
            "overlap_p2p_comm=True",
        where=a["site"] or "", detail={"pairs": pairs[:EXAMPLES]},
        chosen=_chosen(a.get("chosen"), b.get("chosen")))


def _count_finding(counts: list[dict[str, Any]], cycle: str) -> Finding:
    """The replay's per-phase count mismatches (waitfor.counts `count_mismatches`, each one the
    short side finished and went past: a cut exchange is not among them). Where the short side
    never came back to its peer (it waits on a barrier, another peer) and the long side's
    unmatched op is a link of the wait-for cycle, the count explains the cycle, whose fix
    (reorder the exchange) cannot work. One that came back in a later phase may be an order
    the cycle's fix mends: both are listed."""
    first = counts[0]
    long = first["dst"] if first["short"] == first["src"] else first["src"]
    explains = ["wait-for-cycle"] if not first["moved_on"] and f"rank {long}'s " in cycle else []
    return Finding(
        "p2p-count-mismatch", "error",
        f"{first['words']} (sends at {first['send_site'] or '?'}, receives at "
        f"{first['recv_site'] or '?'}): the unmatched op waits forever, and the peer waits for it "
        "in turn",
        fix="make both ranks agree on the number of sends and receives of each exchange (the "
            "microbatch count, the tensors per message, a send skipped on one side)",
        where=first["recv_site"] or first["send_site"] or "",
        detail={"counts": counts[:EXAMPLES], "explains": explains},
        chosen=_chosen(first.get("recv_chosen") if first["recv_site"] else first.get("send_chosen"),
                       first.get("send_chosen") if first["recv_site"] else None))


def _exited_headline(count: dict[str, Any], ends: Ends) -> str:
    """A count whose short side then exited by itself: that exit left the partner's ops
    unmatched, and the partner's error on the closed connection is its consequence."""
    short = count["short"]
    then = [f"rank {x.rank} then raised {raised_words(x.op)}" for x in ends.losses if x.peer == short]
    return (f"CRASHED: {count['words']} (sends at {count['send_site'] or '?'}, receives at "
            f"{count['recv_site'] or '?'}), and rank {short} then exited by itself (a normal end, "
            "its exit line) with that exchange unmatched: the count is the cause"
            + (f"; {'; '.join(then)} ({'a consequence' if len(then) == 1 else 'consequences'})"
               if then else ""))


def _would_hang(conditions: dict[str, Any], deadlock: Deadlock, fix: str) -> Finding:
    where = " or ".join(v.transport.name for v in deadlock.transports)
    return Finding(
        "replay-would-hang", "warning",
        f"every recorded op completed; under NCCL over {where} this order would hang "
        f"({Conditions(**conditions).words()}): {deadlock.cycle_here}; "
        + "; ".join(f"{v.transport.name}: {v.why}" for v in deadlock.transports),
        fix=fix, where=deadlock.where, detail={"conditions": conditions, "deadlock": deadlock.to_json()},
        chosen=_chosen(deadlock.chosen))


def _chosen(*lines: str | None) -> list[str]:
    """A finding's `chosen`: the framework lines that chose its ops, each once, in order."""
    return list(dict.fromkeys(x for x in lines if x))


def _unbatched_finding(key: Key, u: Use, label: str, per_rank: Counter, mapped: dict[Key, str],
                       by_id: dict[str, dict[str, Any]], config: RunConfig) -> Finding:
    path, line, _, function, api, _ = key
    group = u.groups.get(label, {})
    size = group.get("size") or len(group.get("ranks") or [])
    sid = mapped.get(key)
    site = by_id.get(sid) if sid else None
    chain = " -> ".join(site["paths"][0]) if site and site.get("paths") else function
    ranks = sorted(per_rank)
    if u.via_batch:
        what = (f"batch_isend_irecv at {path}:{line} ({function}) issued its ops one by one, "
                f"{sum(per_rank.values())} unbatched op(s)")
        why = config.value("torch_batch_coalesces")
        fix = ("make this run's batch_isend_irecv coalesce; `p2paudit doctor` on the cluster says "
               "whether its torch, backend and TORCH_DISTRIBUTED_DEBUG level do")
        if why is False:
            fix += " (the scan's config already says they do not: see torch_batch_coalesces)"
    else:
        what = f"{sum(per_rank.values())} unbatched {api} op(s) from {path}:{line} ({function})"
        fix = ("route this op through batch_isend_irecv on the pipeline group, or create the "
               "communicators eagerly (init_process_group(device_id=...)) so no 2-rank "
               "communicator is created lazily")
    return Finding(
        "unbatched-run", "error",
        f"{what} on {label} (size {size}) on {len(ranks)} rank(s) (ranks {_ranks_words(ranks)}) "
        f"although batch_p2p_comm=True; path: {chain}",
        fix=fix, site_ids=[sid] if sid else [], where=f"{path}:{line}",
        chosen=[c for c, _ in u.chosen.most_common(CHOSEN_SHOWN)],
        detail={"group": {"label": label, "size": size, "ranks": group.get("ranks")},
                "path": site["paths"][0] if site and site.get("paths") else [function],
                "ops": sum(per_rank.values()), "ranks": ranks})
