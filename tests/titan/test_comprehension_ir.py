"""Comprehensions carry their elements through the call-graph interpreter: the construct of
torch's ScheduleInterleaved1F1B (pytorch/pytorch, torch/distributed/pipelining/schedules.py,
v2.13.0 lines 2024-2053: `stage_index_to_stage = {stage.stage_index: stage for stage in
self._stages}` then `stage = stage_index_to_stage[stage_index]` and `stage.get_fwd_send_ops()`),
with the stages built as the pipelining tutorial builds them (a list comprehension), handed on by
keyword through `_PipelineScheduleRuntime.__init__(self, *args, **kwargs)` (schedules.py:2224,
its `*args` empty) and walked by a `for stage in self._stages` loop (schedules.py:1789)."""

from __future__ import annotations

from tests.static.interp.test_callgraph import COMM, analyse

SCHEDULE = '''
from pkg import comm

class Stage:
    def __init__(self, index):
        self.stage_index = index
    def get_fwd_send_ops(self, t):
        return comm.batched(tensor=t, peer=1, group=None)
    def prepare(self, t):
        comm.unbatched(tensor=t, peer=0, group=None)

class Multi:
    def __init__(self, stages, n_microbatches):
        self._stages = stages
        for stage in self._stages:
            stage.prepare(None)

class Runtime(Multi):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

class Interleaved(Runtime):
    def __init__(self, stages, n_microbatches):
        super().__init__(stages=stages, n_microbatches=n_microbatches)
    def step(self, order):
        stage_index_to_stage = {stage.stage_index: stage for stage in self._stages}
        for stage_index in order:
            stage = stage_index_to_stage[stage_index]
            stage.get_fwd_send_ops(None)
'''


def test_dict_comprehension_over_a_list_comprehension_decides_the_stage_ops(tmp_path):
    entry = ("from pkg.schedule import Interleaved, Stage\n"
             "stages = [Stage(DATA + i) for i in range(2)]\n"
             "Interleaved(stages, 8).step(DATA)\n")
    out = analyse(tmp_path, {"pkg/comm.py": COMM, "pkg/schedule.py": SCHEDULE}, entry, {})
    send = out["batched:batch_isend_irecv"]
    assert send.reachable == "yes"
    assert send.paths == [["schedule.Interleaved.step", "schedule.Stage.get_fwd_send_ops", "comm.batched"]]
    loop = out["unbatched:isend"]  # the loop over the stored list reaches each stage's method too
    assert loop.reachable == "yes"
    assert loop.paths[0][-2:] == ["schedule.Stage.prepare", "comm.unbatched"]


# torch's get_schedule_class (schedules.py v2.13.0:3620-3644): a name table, its lower-cased keys
# by a dict comprehension over the table, the config's name lower-cased, then two lookups.
TABLE = '''
from pkg import comm

class OneF1B:
    def __init__(self, stage):
        self.stage = stage
    def step(self):
        comm.unbatched(tensor=None, peer=0, group=None)

class Interleaved1F1B:
    def __init__(self, stages):
        self.stages = stages
    def step(self):
        comm.batched(tensor=None, peer=1, group=None)

def get_schedule_class(schedule_name):
    schedule_map = {"1F1B": OneF1B, "Interleaved1F1B": Interleaved1F1B}
    lowercase_keys = {k.lower(): k for k in schedule_map}
    lowercase_schedule_name = schedule_name.lower()
    if lowercase_schedule_name not in lowercase_keys:
        raise ValueError(schedule_name)
    return schedule_map[lowercase_keys[lowercase_schedule_name]]

def build(parallelism, stages):
    return get_schedule_class(parallelism.pipeline_parallel_schedule)(stages)
'''


def test_the_configured_schedule_name_picks_one_class_through_the_lower_cased_table(tmp_path):
    entry = "from pkg.table import build\nbuild(P2PAUDIT_TITAN_PARALLELISM, DATA).step()\n"
    files = {"pkg/comm.py": COMM, "pkg/table.py": TABLE}
    out = analyse(tmp_path, files, entry, {"pipeline_parallel_schedule": "Interleaved1F1B"})
    assert out["batched:batch_isend_irecv"].reachable == "yes"
    assert out["unbatched:isend"].reachable != "yes" and out["unbatched:isend"].paths == []
    unknown = analyse(tmp_path / "u", files, entry, {})  # no schedule given: either may run
    assert unknown["unbatched:isend"].reachable == "yes"
    assert unknown["batched:batch_isend_irecv"].reachable == "yes"


# torchtitan 0.3.0's builder (torchtitan/distributed/pipeline_parallel.py:331-345 in the PyPI
# sdist): one allocation site text, `schedule_class(...)`, called in two branches, with the stage
# list for looped schedules and `stages[0]` for single-stage ones.
BUILDER = '''
from pkg import comm

class Single:
    def __init__(self, stage):
        self._stage = stage
    def step(self):
        self._stage.send()

class Stage:
    def send(self):
        comm.unbatched(tensor=None, peer=0, group=None)

def build(schedule_class, looped, stages):
    if looped:
        schedule = schedule_class(stages)
    else:
        schedule = schedule_class(stages[0])
    return schedule
'''


def test_an_allocation_site_reached_with_other_arguments_holds_both(tmp_path):
    entry = ("from pkg.builder import Single, Stage, build\n"
             "build(Single, DATA, [Stage() for _ in range(2)]).step()\n")
    out = analyse(tmp_path, {"pkg/comm.py": COMM, "pkg/builder.py": BUILDER}, entry, {})
    assert out["unbatched:isend"].reachable == "yes"
    assert out["unbatched:isend"].paths == [["builder.Single.step", "builder.Stage.send", "comm.unbatched"]]
