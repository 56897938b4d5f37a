"""Type tests the interpreter decides: `isinstance`, `issubclass`, `callable`, `hasattr` of a
known value (None, a literal, an instance of an analysed class) against a known class decide
their branch; an unknown value or class stays unknown (issue 22, item 8).

The construct is megatron-core 0.19's `get_forward_backward_func` (NVIDIA/Megatron-LM,
megatron/core/pipeline_parallel/schedules.py, as in the megatron-core 0.19.2 wheel on PyPI):

    def get_forward_backward_func(pp_size=None, vp_size=None, schedule_pg_collection=None):
        if isinstance(schedule_pg_collection, MultiModuleProcessGroupCollection):
            return forward_backward_pipelining_without_interleaving
        ...
        if pp_size > 1: ... else: forward_backward_func = forward_backward_no_pipelining

Read as "either way", the first branch made every pipeline site reachable at PP=1.
"""

from __future__ import annotations

import ast
from pathlib import Path
from textwrap import dedent

import pytest

from auditor import sources
from auditor.rulebook import interpreter
from auditor.static.interp.callgraph import Interpreter
from auditor.static.inventory import inventory
from auditor.static.ir.build import build
from auditor.static.interp.program import Program
from auditor.static.interp.reach import Reachability, site_reach
from auditor.static.source import Source

COMM = '''
import torch.distributed as dist

def pipelined(t, group):
    return dist.isend(t, 1, group=group)
'''

# megatron/core/process_groups_config.py (0.19.2): a plain dataclass, no bases.
GROUPS = '''
from dataclasses import dataclass

@dataclass
class MultiModuleProcessGroupCollection:
    module_pgs: dict = None

class Opened(metaclass=Meta):
    pass

class Generic2(SomeUnknownBase):
    pass
'''

SCHEDULES = '''
from pkg import comm
from pkg.groups import MultiModuleProcessGroupCollection, Opened, Generic2

def no_pipelining(t):
    return t

def without_interleaving(t):
    return comm.pipelined(t, None)

def get_forward_backward_func(pp_size=None, schedule_pg_collection=None):
    if isinstance(schedule_pg_collection, MultiModuleProcessGroupCollection):
        return without_interleaving
    if pp_size > 1:
        return without_interleaving
    return no_pipelining
'''


def reached(tmp_path: Path, schedules: str, entry: str, config: dict) -> bool:
    """Whether `comm.pipelined`'s isend is reached from `entry` under `config` ("yes"; a branch
    the interpreter cannot decide is walked, so undecided tests read "yes" too)."""
    root = tmp_path / "proj"
    files = {"pkg/__init__.py": "", "pkg/comm.py": COMM, "pkg/groups.py": GROUPS,
             "pkg/schedules.py": schedules}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(dedent(text))
    src = sources.resolve(str(root))
    sites = inventory(src, jobs=1).sites
    rules, _, _ = interpreter.load({"megatron-core": "0.17.0"})
    program = Program([src], jobs=0)
    try:
        interp = Interpreter(program, config, rules)
        code = dedent(entry)
        start = interp.run_module_ir("<entry>", build(ast.parse(code), Source(code), "<entry>", False, {}))
        reach = Reachability(interp, [start])
        by_function = {f"{s.module}.{s.function}": [s.id] for s in sites}
        probes = {f"{s.module}.{s.function}": interp.probe(s.module, s.function) for s in sites}
        (site,) = sites
        return site_reach(interp, reach, by_function, probes)[site.id].reachable == "yes"
    finally:
        program.close()


ENTRY = "from pkg.schedules import get_forward_backward_func\nget_forward_backward_func({args})(DATA)\n"


@pytest.mark.parametrize(("args", "expected"), [
    ("", False),  # the default None is no MultiModuleProcessGroupCollection
    ("schedule_pg_collection=None", False),
    ("schedule_pg_collection=3", False),
    ("schedule_pg_collection=MultiModuleProcessGroupCollection()", True),
    ("schedule_pg_collection=DATA", True),  # unknown stays unknown: the branch is walked
])
def test_isinstance_of_a_known_value_decides_the_branch(tmp_path, args, expected):
    entry = ("from pkg.groups import MultiModuleProcessGroupCollection\n"
             + ENTRY.format(args=f"1, {args}" if args else "1"))
    assert reached(tmp_path, SCHEDULES, entry, {}) is expected


def _branch(test: str) -> str:
    return SCHEDULES.replace(
        "isinstance(schedule_pg_collection, MultiModuleProcessGroupCollection)", test)


@pytest.mark.parametrize(("test", "expected"), [
    # A class whose metaclass or base is not analysed may answer isinstance itself: unknown.
    ("isinstance(schedule_pg_collection, Opened)", True),
    ("isinstance(schedule_pg_collection, Generic2)", True),
    ("isinstance(schedule_pg_collection, (int, MultiModuleProcessGroupCollection))", False),
    ("isinstance(schedule_pg_collection, (type(None), int))", True),
    ("issubclass(MultiModuleProcessGroupCollection, Opened)", True),
    ("issubclass(MultiModuleProcessGroupCollection, Generic2)", True),
    ("issubclass(MultiModuleProcessGroupCollection, int)", False),
    ("callable(schedule_pg_collection)", False),
    ("hasattr(schedule_pg_collection, 'module_pgs')", False),
    # An attribute no class body binds may be set at run time: unknown, never False.
    ("not hasattr(MultiModuleProcessGroupCollection, 'other')", True),
    ("not hasattr(MultiModuleProcessGroupCollection, 'module_pgs')", False),
    ("not callable(no_pipelining)", False),
])
def test_other_type_tests_on_known_values(tmp_path, test, expected):
    assert reached(tmp_path, _branch(test), ENTRY.format(args="1"), {}) is expected
