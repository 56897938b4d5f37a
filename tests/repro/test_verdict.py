"""auditor.repro.verdict (with the lazy-init case's plan, auditor.repro.lazy_init, and
auditor.repro.plan): the one line a reproducer ends with, judged from the per-rank state files
(auditor.repro.progress's format) as a run leaves them, and whether the wait-for model agrees.
No rank runs here: the states are those of the runs docs/findings.md §1 describes."""

from __future__ import annotations

import pytest

from auditor.errors import InputError
from auditor.repro import lazy_init
from auditor.repro.plan import Spec
from auditor.repro.verdict import judge


def states(plan, phase: str, op: str, *, t_done: float | None = None, coalesced: bool | None = None):
    """Every rank at `phase`, its first op at `op` and the others done (or not reached)."""
    out = {}
    for rank, program in plan.programs.items():
        rest = [{"state": "done", "t": 100.0} if phase == "done" else None] * (len(program) - 1)
        out[rank] = {"phase": phase, "t_ops": 100.0, "t_done": t_done, "error": None, "wrong_data": [],
                     "ops": [{"state": op, "t": 100.0}, *rest],
                     "coalesced": {} if coalesced is None else {"0": coalesced}}
    return out


def test_the_lazy_creation_hang_names_each_ranks_communicator_and_the_model_agrees():
    plan = lazy_init.plan(Spec("lazy-init", nproc=3))
    outcome = judge(plan, states(plan, "ops", "issuing"), killed_at=130.0)
    assert (outcome.status, outcome.exit_code, outcome.seconds) == ("hung", 1, 30.0)
    assert outcome.line == (
        "lazy-init, 3 ranks, nccl, lazy init, first ops rank 0 batched, others unbatched: HUNG after 30 s: "
        "rank 0 blocked in batch_isend_irecv([isend to 1 (16 B)]) (lazy creation of communicator default_pg); "
        "rank 1 blocked in recv from 0 (16 B) in dist.recv (lazy creation of communicator default_pg:0-1); "
        "rank 2 blocked in recv from 1 (16 B) in dist.recv (lazy creation of communicator default_pg:1-2); "
        "wait-for model (nvlink, 32 MiB buffered): hang, agrees")
    assert outcome.model is not None and outcome.model.hang
    assert outcome.to_json()["model"]["hang"] is True


def test_a_fixed_run_completes_and_a_run_the_model_calls_a_hang_disagrees():
    fixed = lazy_init.plan(Spec("lazy-init", nproc=3, fix="coalesced"))
    done = judge(fixed, states(fixed, "done", "done", t_done=100.25, coalesced=True), killed_at=None)
    assert (done.status, done.exit_code) == ("completed", 0)
    assert done.line.endswith(": completed in 0.250 s; batch_isend_irecv coalesced (observed); "
                              "wait-for model (nvlink, 32 MiB buffered): no hang, agrees")
    unfixed = lazy_init.plan(Spec("lazy-init", nproc=3))
    surprise = judge(unfixed, states(unfixed, "done", "done", t_done=101.5, coalesced=True), killed_at=None)
    assert surprise.status == "completed" and surprise.line.endswith(": hang, DISAGREES")


def test_wrong_data_fails_the_run_naming_the_op():
    plan = lazy_init.plan(Spec("lazy-init", nproc=3, fix="coalesced"))
    ran = states(plan, "done", "done", t_done=100.25, coalesced=True)
    ran[2]["wrong_data"] = [0]
    outcome = judge(plan, ran, killed_at=None)
    assert (outcome.status, outcome.exit_code) == ("failed", 1)
    assert "but rank 2 received wrong data in its batch_isend_irecv([irecv from 1 (16 B)])" in outcome.line
    assert outcome.line.endswith("wait-for model: no hang")  # a failed run is not compared


def test_on_gloo_no_model_is_claimed_and_the_note_says_why():
    plan = lazy_init.plan(Spec("lazy-init", nproc=2, backend="gloo"))
    outcome = judge(plan, states(plan, "done", "done", t_done=101.5, coalesced=False), killed_at=None)
    assert outcome.status == "completed" and outcome.model is None
    assert "completed in 1.5 s; batch_isend_irecv ran op by op (observed) [gloo creates no communicator lazily" \
        in outcome.line and "wait-for model" not in outcome.line


def test_a_rank_that_never_started_or_stayed_in_init_is_said():
    plan = lazy_init.plan(Spec("lazy-init", nproc=3))
    ran = states(plan, "ops", "issuing")
    ran[1] = None
    ran[2]["phase"] = "init"
    line = judge(plan, ran, killed_at=130.0).line
    assert "rank 1 never started; rank 2 blocked in init_process_group" in line


@pytest.mark.parametrize("spec, subject", [
    (Spec("lazy-init", nproc=1), "--nproc"),
    (Spec("lazy-init", size=4096), "--size/--microbatches/--variable-seq-lengths"),
    (Spec("lazy-init", transport="net"), "--transport"),
    (Spec("lazy-init", backend="gloo", fix="eager"), "--fix eager"),
])
def test_choices_the_case_cannot_take_are_bad_input(spec, subject):
    with pytest.raises(InputError) as exc:
        lazy_init.plan(spec)
    assert exc.value.subject == subject


def test_a_spec_is_saved_for_the_ranks_and_read_back(tmp_path):
    spec = Spec("lazy-init", nproc=4, backend="gloo", fix="unbatched", timeout=5.0)
    spec.save(tmp_path / "spec.json")
    assert Spec.load(tmp_path / "spec.json") == spec
