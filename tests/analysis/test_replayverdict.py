"""The verdicts on a replayed op order (auditor.analysis.replayverdict): simulate's is never clean
while something it needed is unknown, and a hang is a finding with exit 1."""

from __future__ import annotations

from auditor.analysis.replayverdict import prediction_verdict, simulation_verdict


def sim(**over) -> dict:
    return {"verdict": "completes", "hypothetical": "this op order completes", "unknown": [],
            "unpredicted": [], "startup_errors": [], **over}


def test_an_unknown_size_leaves_simulate_inconclusive_with_what_decides_it():
    decided = simulation_verdict(sim(verdict="inconclusive", unknown=["micro batch size"]))
    assert (decided.status, decided.exit_code) == ("inconclusive", 1)
    assert decided.headline == "INCONCLUSIVE: not simulated; unknown micro batch size"
    assert [u.to_json() for u in decided.undecided] == [
        {"what": "micro batch size", "decide": "--set KEY=VALUE for the size it names"}]


def test_a_replay_that_completes_is_clean_and_one_that_hangs_a_finding():
    assert simulation_verdict(sim()).to_json()["status"] == "clean"
    hang = simulation_verdict(sim(verdict="hang", hypothetical="rank 0 waits for rank 1"))
    assert (hang.status, hang.headline, hang.exit_code) == (
        "findings", "HANG PREDICTED: rank 0 waits for rank 1", 1)


def test_a_prediction_over_a_transport_that_hangs_is_a_finding():
    deadlock = {"transport": "net", "will_deadlock": True, "can_deadlock": True,
                "cycle_here": "rank 0's SEND waits for rank 1's RECV", "decide": ""}
    decided = prediction_verdict(deadlock, [])
    assert decided.status == "findings"
    assert decided.headline == ("HANG PREDICTED: this op order will deadlock over net: "
                                "rank 0's SEND waits for rank 1's RECV")
