"""Value flow the call graph keeps through a list display and the builtins that hand their
argument's elements on: the construct of torch's single-stage schedules (pytorch/pytorch,
torch/distributed/pipelining/schedules.py, v2.13.0): `_initialize_stage` passes `[self._stage]`
(line 731) to `_initialize_pp_stages`, whose `for stage in stages:` calls each stage's
`_prepare_forward_infra` (line 456), and `_warmup_p2p` walks `cast(list[PipelineStage], stages)`
and `reversed(cast(...))` (lines 362-367) to call `_warmup_forward_vote` and
`_warmup_backward_result`, the stages' own send/recv."""

from __future__ import annotations

from tests.static.interp.test_callgraph import COMM, analyse

SCHEDULE = '''
from typing import cast
from pkg import comm

class Stage:
    def prepare(self):
        comm.unbatched(tensor=None, peer=0, group=None)
    def vote(self):
        comm.batched(tensor=None, peer=1, group=None)

class Single:
    def __init__(self, stage):
        self._stage = stage
    def step(self):
        self._initialize_pp_stages([self._stage])
    def _initialize_pp_stages(self, stages):
        if all(isinstance(s, Stage) for s in stages):
            for stage in reversed(cast(list[Stage], stages)):
                stage.vote()
        for stage in stages:
            stage.prepare()
'''


def test_a_list_display_and_cast_reversed_hand_their_elements_to_the_loop(tmp_path):
    entry = "from pkg.schedule import Single, Stage\nSingle(Stage()).step()\n"
    out = analyse(tmp_path, {"pkg/comm.py": COMM, "pkg/schedule.py": SCHEDULE}, entry, {})
    prepare, vote = out["unbatched:isend"], out["batched:batch_isend_irecv"]
    assert prepare.reachable == "yes"
    assert prepare.paths == [["schedule.Single.step", "schedule.Single._initialize_pp_stages",
                              "schedule.Stage.prepare", "comm.unbatched"]]
    assert vote.reachable == "yes"
    assert vote.paths[0][-2:] == ["schedule.Stage.vote", "comm.batched"]


def test_a_starred_item_of_a_display_gives_its_own_elements(tmp_path):
    """`[*stages, extra]`: the loop reaches the starred list's elements, not the list."""
    entry = ("from pkg.schedule import Single, Stage\n"
             "stages = [Stage() for _ in range(2)]\n"
             "for s in [*stages]:\n    s.prepare()\n")
    out = analyse(tmp_path, {"pkg/comm.py": COMM, "pkg/schedule.py": SCHEDULE}, entry, {})
    assert out["unbatched:isend"].reachable == "yes"
