"""auditor.analysis.waitfor.result: what a replay answers, in words and as JSON, for the
lazy-creation deadlock of docs/findings.md section 1 (the lazy-init reproducer's programs:
rank 0 batched, the others unbatched, on 3 ranks) and for its eager-init fix."""

from __future__ import annotations

from auditor.analysis.waitfor.replay import analyze
from auditor.analysis.waitfor.result import Analysis, OpState, RankState
from auditor.repro import lazy_init
from auditor.repro.plan import Spec


def replay(fix: str | None) -> Analysis:
    plan = lazy_init.plan(Spec("lazy-init", nproc=3, fix=fix))
    return analyze(plan.programs, plan.conditions())


def test_a_hang_in_words_one_line_per_blocked_rank_then_the_cycle():
    result = replay(None)
    assert result.hang
    head, *ranks, cycle = result.summary().splitlines()
    assert head == f"HANG ({result.conditions.words()})"
    assert [line.split(":")[0] for line in ranks] == ["  rank 0", "  rank 1", "  rank 2"]
    assert "inside the creation of communicator default_pg for its ISEND to 1 (16 B)" in ranks[0]
    assert cycle == f"  wait-for cycle: {result.cycle}" and result.cycle.endswith(": a cycle")


def test_as_json_every_rank_with_where_its_cpu_is_and_each_op_state():
    result = replay(None)
    doc = result.to_json()
    assert doc["hang"] is True and doc["cycle"] == result.cycle and doc["blocked"] == result.blocked
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2]
    rank0 = doc["ranks"][0]
    assert rank0["cpu"] == "creating"
    assert rank0["blocked_on"] == [{"rank": 1, "index": None, "reason": "join"},
                                   {"rank": 2, "index": None, "reason": "join"}]
    [op] = rank0["ops"]
    assert op == {"index": 0, "api": "isend", "peer": 1, "bytes": 16,
                  "group": {"ranks": [0, 1, 2], "desc": "default_pg"}, "batch": 0, "coalesced": True,
                  "call": "batch_isend_irecv", "communicator": "default_pg", "state": "not_issued",
                  "blocked_on": None}
    assert isinstance(result.ranks[0], RankState) and isinstance(result.ranks[0].ops[0], OpState)


def test_the_fix_completes_and_says_under_which_conditions():
    result = replay("eager")
    assert not result.hang and result.cycle == "" and result.blocked == []
    assert result.summary() == f"no hang: every op completes ({result.conditions.words()})"
    assert "eager init" in result.conditions.words()
    assert all(op["state"] == "done" for r in result.to_json()["ranks"] for op in r["ops"])
