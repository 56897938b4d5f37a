"""The verdicts on a replayed op order: `simulate`'s (the real schedule's order, recorded) and
`repro --predict`'s (a case's order), from MUST's two verdicts on it (waitfor.deadlock).

Apart from the scan's verdict (`verdict`) because they judge a replay, not a document's sites;
they share its `RunVerdict`, so every command's exit code and headline still come from one type.
"""

from __future__ import annotations

from typing import Any

from auditor.analysis import causes as causes_of
from auditor.analysis.undecided import Undecided
from auditor.analysis.verdict import RunVerdict


def simulation_verdict(sim: dict[str, Any]) -> RunVerdict:
    """`p2paudit simulate`: the real schedule's recorded order, replayed. It *will deadlock here*
    (every replay hangs with its transport's bound and the planned sizes), a start-up error, a
    mismatched pair or a fired site the scan did not predict is a finding; open conditions the
    replays disagree on, an unknown size, or a size between a transport's bounds leave "will
    deadlock here" undecided: inconclusive, never clean. An order that *can deadlock* (under the
    zero-buffer contract) but completes here is clean, with that said in the headline."""
    if sim["verdict"] == "inconclusive" and sim.get("unknown"):
        return RunVerdict("inconclusive", "INCONCLUSIVE: not simulated; unknown "
                          + "; ".join(sim["unknown"]),
                          [Undecided(u, "--set KEY=VALUE for the size it names") for u in sim["unknown"]])
    if sim.get("not_run") == "startup":
        return RunVerdict("findings", f"DOES NOT START: {sim['hypothetical']}",
                          errors=len(sim["startup_errors"]))
    if sim.get("not_run") == "memory":
        return RunVerdict("inconclusive", f"INCONCLUSIVE: not simulated; {sim['hypothetical']}",
                          [Undecided("whether this order hangs (not simulated on this machine)",
                                     "--microbatches N (fewer in flight), or simulate on a machine "
                                     "with more memory")])
    if sim.get("not_run") == "incomplete":
        return RunVerdict("inconclusive", f"INCONCLUSIVE: {sim['hypothetical']}",
                          [Undecided("whether this order hangs (its trace is incomplete)",
                                     "--trace-dir on a filesystem with room (df -h), in a "
                                     "shell without a file size limit (ulimit -f)")])
    problems = []
    deadlock = sim.get("deadlock")
    if sim["unpredicted"]:
        problems.append(f"{len(sim['unpredicted'])} fired site(s) the scan did not predict")
    if sim.get("mismatched_pairs"):
        problems.append(_mismatch_words(sim["mismatched_pairs"]))
    if sim["verdict"] == "hang":
        head = f"HANG PREDICTED: {sim['hypothetical']}"
    elif sim["verdict"] == "completes":
        head = f"{'FINDINGS' if problems else 'CLEAN'}: completes: {sim['hypothetical']}"
    else:
        head = f"INCONCLUSIVE: {sim['hypothetical']}"
    if problems:
        head += "; " + "; ".join(problems)
    if sim["startup_errors"]:  # the cause comes first: the front end stops the run as written
        head = (f"DOES NOT START: {causes_of.first_sentence(sim['startup_errors'][0])} (the "
                f"front end stops it as written); simulated as megatron-core used as a library "
                f"runs it: {head}")
        problems.append("does not start")
    if sim["verdict"] == "hang" or problems:
        return RunVerdict("findings", head, errors=len(problems) + (sim["verdict"] == "hang"),
                          deadlock=deadlock)
    if sim["verdict"] == "inconclusive":
        if deadlock is None or deadlock.get("open_conditions"):
            why = Undecided("the open conditions replay differently", "state them in the script "
                            "(NNODES, NPROC_PER_NODE, TORCH_DISTRIBUTED_DEBUG) or pass --torch "
                            "and --transport")
        else:
            why = _will_undecided(deadlock, "the planned sizes")
        return RunVerdict("inconclusive", head, [why], deadlock=deadlock)
    return RunVerdict("clean", head, deadlock=deadlock)


def _mismatch_words(pairs: list[dict[str, Any]]) -> str:
    first = pairs[0]
    return (f"MISMATCH: {len(pairs)} send/receive pair(s) disagree in {first['what']} (first: rank "
            f"{first['send']['rank']}'s {first['send']['api']} at {first['send']['site']} meets "
            f"rank {first['recv']['rank']}'s {first['recv']['api']} at {first['recv']['site']})")


def prediction_verdict(deadlock: dict[str, Any], mismatched_pairs: list[dict[str, Any]]) -> RunVerdict:
    """`p2paudit repro --predict`: a case's op order, replayed (waitfor.deadlock.Deadlock.to_json;
    `mismatched_pairs`: the replay's). It *will deadlock here* (every transport the case's
    --transport leaves possible hangs with the case's sizes), or a send and its receive disagree
    in size or dtype: a finding; a transport that may or may not: inconclusive; one that
    completes everywhere with every pair agreeing is clean, its *can deadlock* said in the
    headline."""
    over = deadlock["transport"]
    if mismatched_pairs:
        return RunVerdict("findings", _mismatch_words(mismatched_pairs), errors=1, deadlock=deadlock)
    if deadlock["will_deadlock"]:
        return RunVerdict("findings", f"HANG PREDICTED: this op order will deadlock over {over}: "
                          f"{deadlock['cycle_here']}", errors=1, deadlock=deadlock)
    if deadlock["will_deadlock"] is None:
        return RunVerdict("inconclusive", f"INCONCLUSIVE: this op order can deadlock; whether it "
                          f"will over {over} is undecided",
                          [_will_undecided(deadlock, "the case's sizes")], deadlock=deadlock)
    can = "; but it can deadlock where sends are not buffered" if deadlock["can_deadlock"] else ""
    return RunVerdict("clean", f"CLEAN: this op order completes over {over}{can}",
                      deadlock=deadlock)


def _will_undecided(deadlock: dict[str, Any], sizes: str) -> Undecided:
    return Undecided(f"will this order deadlock over {deadlock['transport']}: {sizes} lie between "
                     "what its transport(s) complete and hang", deadlock["decide"])
