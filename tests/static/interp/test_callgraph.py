"""The call-graph interpreter on small programs, one language feature each: what it resolves,
which guards it evaluates, which patches it executes. The real-release behaviour is in
test_scan.py; these pin down the semantics."""

from __future__ import annotations

import ast
from pathlib import Path
from textwrap import dedent

import pytest

from auditor import sources
from auditor.rulebook import interpreter
from auditor.static.interp.callgraph import MAX_DEPTH, MAX_NODES, Interpreter
from auditor.static.inventory import inventory
from auditor.static.ir.build import build
from auditor.static.interp.program import Program
from auditor.static.interp.reach import Reachability, site_reach
from auditor.static.source import Source

COMM = '''
import torch.distributed as dist

def batched(*, tensor, peer, group):
    op = dist.P2POp(dist.isend, tensor, peer, group)
    return dist.batch_isend_irecv([op])

def unbatched(*, tensor, peer, group):
    return dist.isend(tensor, peer, group=group)
'''


def analyse(tmp_path: Path, files: dict[str, str], entry: str, config: dict) -> dict[str, dict]:
    """Interpret `entry` over a package `pkg` made of `files`; per site function: the site
    results, keyed by `function:api`."""
    root = tmp_path / "proj"
    for name, text in {"pkg/__init__.py": "", **files}.items():
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
        by_function: dict[str, list[str]] = {}
        for s in sites:
            by_function.setdefault(f"{s.module}.{s.function}", []).append(s.id)
        probes = {f"{s.module}.{s.function}": interp.probe(s.module, s.function) for s in sites}
        results = site_reach(interp, reach, by_function, probes)
        out = {f"{s.function}:{s.api}": results[s.id] for s in sites}
        out["<patches>"] = [(p.target, p.replacement) for p in interp.patches]  # type: ignore[assignment]
        out["<cuts>"] = [c.to_json(interp.nodes) for c in interp.cuts]  # type: ignore[assignment]
        return out
    finally:
        program.close()


def test_function_held_in_a_variable_chosen_by_a_config_guard(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/step.py": '''
        from pkg import comm
        def communicate(config, t):
            if config.batch_p2p_comm:
                p2p_func = comm.batched
            else:
                p2p_func = comm.unbatched
            return p2p_func(tensor=t, peer=1, group=None)
    '''}
    entry = "from pkg.step import communicate\ncommunicate(DATA, DATA)\n"
    out = analyse(tmp_path, files, entry, {"batch_p2p_comm": True})
    assert out["batched:batch_isend_irecv"].reachable == "yes"
    assert out["batched:batch_isend_irecv"].paths == [["step.communicate", "comm.batched"]]
    assert out["unbatched:isend"].reachable == "no"
    assert out["unbatched:isend"].guards == ["not (config.batch_p2p_comm)  [no]"]
    out = analyse(tmp_path, files, entry, {"batch_p2p_comm": False})
    assert (out["batched:P2POp"].reachable, out["unbatched:isend"].reachable) == ("no", "yes")
    out = analyse(tmp_path, files, entry, {})
    assert (out["batched:P2POp"].reachable, out["unbatched:isend"].reachable) == ("unknown", "unknown")


def test_function_returned_by_a_function(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/pick.py": '''
        from pkg import comm
        def get_func(size=None):
            if size is None:
                size = get_size()
            if size > 1:
                f = comm.batched
            else:
                f = comm.unbatched
            return f
        def get_size():
            return 0
    '''}
    rules_free = "from pkg.pick import get_func\nget_func(4)(tensor=DATA, peer=1, group=DATA)\n"
    out = analyse(tmp_path, files, rules_free, {})
    assert (out["batched:P2POp"].reachable, out["unbatched:isend"].reachable) == ("yes", "no")
    assert out["unbatched:isend"].reason == "blocked in pick.get_func by `not (size > 1)`"


# Installs a closure over the original `comm.batched` that sends on the default group.
PATCH_TO_DEFAULT_GROUP = '''
def install():
    from pkg import comm
    original = comm.batched
    def on_default_group(**kwargs):
        kwargs['group'] = None
        return original(**kwargs)
    comm.batched = on_default_group
'''


def test_monkeypatch_with_a_closure_changes_the_group(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/patch.py": PATCH_TO_DEFAULT_GROUP, "pkg/step.py": '''
        from pkg import comm
        from torch.distributed import new_group
        def step(t):
            comm.batched(tensor=t, peer=1, group=new_group([0, 1]))
    '''}
    entry = "from pkg.patch import install\nfrom pkg.step import step\nstep(DATA)\ninstall()\nstep(DATA)\n"
    out = analyse(tmp_path, files, entry, {})
    assert out["<patches>"] == [("pkg.comm.batched", "pkg.patch.install.<locals>.on_default_group")]
    # Before the patch the group is the one passed; after it, the default group.
    assert out["batched:P2POp"].groups == ["default group", "unknown"]
    assert out["batched:P2POp"].paths == [
        ["step.step", "comm.batched"], ["step.step", "patch.install.<locals>.on_default_group", "comm.batched"]]


def test_methods_through_self_attributes_super_and_properties(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/model.py": '''
        from pkg import comm
        class Base:
            def __init__(self, config):
                self.config = config
        class Communicator(Base):
            def __init__(self, config, pp_group):
                super().__init__(config)
                self.pp_group = pp_group
            @property
            def first_stage(self):
                return self.pp_group.rank() == 0
            def send(self, t):
                if not self.first_stage:
                    self._send(t)
            def _send(self, t):
                comm.unbatched(tensor=t, peer=0, group=self.pp_group)
        class Schedule:
            def __init__(self, config, group):
                self.communicator = Communicator(config, group)
            def run(self, t):
                self.communicator.send(t)
    '''}
    entry = "from pkg.model import Schedule\nSchedule(DATA, DATA).run(DATA)\n"
    out = analyse(tmp_path, files, entry, {})
    site = out["unbatched:isend"]
    assert site.reachable == "yes"
    assert site.paths == [["model.Schedule.run", "model.Communicator.send", "model.Communicator._send", "comm.unbatched"]]
    assert site.conditions == ["not self.first_stage"]
    assert site.groups == ["pp group"]  # `pp_group` names the pipeline group (rules/megatron-core.toml)


def test_validation_raise_keeps_the_status_and_early_return_rules_out_the_rest(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/step.py": '''
        from pkg import comm
        def step(config, t, cp_group):
            if config.pipeline_dtype is None:
                raise ValueError("pipeline_dtype must be set")
            comm.batched(tensor=t, peer=1, group=None)
            if cp_group.size() == 1:
                return t
            comm.unbatched(tensor=t, peer=1, group=cp_group)
    '''}
    entry = "from pkg.step import step\nstep(DATA, DATA, DATA)\n"
    out = analyse(tmp_path, files, entry, {"context_parallel_size": 1})
    assert out["batched:P2POp"].reachable == "yes"  # pipeline_dtype is unknown: assumed valid
    assert out["batched:P2POp"].guards == []
    unbatched = out["unbatched:isend"]
    assert unbatched.reachable == "no"
    assert unbatched.guards == ["not (cp_group.size() == 1)  [no]"]
    out = analyse(tmp_path, files, entry, {"context_parallel_size": 2})
    assert out["unbatched:isend"].reachable == "yes"


@pytest.mark.parametrize("config,expected", [({"flag": True}, "yes"), ({"flag": False}, "no"), ({}, "unknown")])
def test_three_valued_guards_on_nested_conditions(tmp_path, config, expected):
    files = {"pkg/comm.py": COMM, "pkg/step.py": '''
        from pkg import comm
        def step(args, t):
            if args.flag and (t is not None or args.other):
                comm.unbatched(tensor=t, peer=1, group=None)
    '''}
    out = analyse(tmp_path, files, "from pkg.step import step\nstep(DATA, DATA)\n", {**config, "other": False})
    assert out["unbatched:isend"].reachable == expected


def test_a_name_defined_twice_keeps_both_bodies(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/step.py": '''
        import os
        from pkg import comm
        if os.environ.get("UNBATCHED"):
            def send(t):
                comm.unbatched(tensor=t, peer=1, group=None)
        else:
            def send(t):
                comm.batched(tensor=t, peer=1, group=None)
    '''}
    out = analyse(tmp_path, files, "from pkg.step import send\nsend(DATA)\n", {})
    assert (out["batched:P2POp"].reachable, out["unbatched:isend"].reachable) == ("yes", "yes")


def test_patching_a_class_leaves_its_namesake_in_another_module_alone(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/a.py": '''
        from pkg import comm
        class Worker:
            def step(self, t):
                comm.unbatched(tensor=t, peer=1, group=None)
    ''', "pkg/b.py": '''
        from pkg import comm
        class Worker:
            def step(self, t):
                comm.batched(tensor=t, peer=1, group=None)
    ''', "pkg/patch.py": '''
        from pkg import a
        def quiet(self, t):
            return t
        a.Worker.step = quiet
    '''}
    entry = "import pkg.patch as p\nfrom pkg.b import Worker\nWorker().step(DATA)\n"
    out = analyse(tmp_path, files, entry, {})
    assert out["<patches>"] == [("pkg.a.Worker.step", "pkg.patch.quiet")]
    assert out["batched:P2POp"].reachable == "yes"


def test_a_site_beyond_the_node_budget_is_unknown_and_the_cut_is_named(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/step.py": '''
        from pkg import comm
        def ident(x):
            return x
        def step(t):
            comm.unbatched(tensor=t, peer=1, group=None)
    '''}
    # Each ident(i) is a calling context of its own: the budget is spent before step runs.
    calls = "".join(f"ident({i})\n" for i in range(MAX_NODES + 1))
    entry = f"from pkg.step import ident, step\n{calls}step(DATA)\n"
    out = analyse(tmp_path, files, entry, {})
    site = out["unbatched:isend"]
    assert site.reachable == "unknown"
    assert site.reason.startswith(f"not analysed: the MAX_NODES budget ({MAX_NODES}) stopped the call graph at ")
    assert {"function": "pkg.step.step", "budget": "MAX_NODES", "limit": MAX_NODES,
            "called_from": "<entry>.<module>"} in out["<cuts>"]


def test_a_call_chain_deeper_than_the_depth_budget_is_cut_where_it_ran_out(tmp_path):
    depth = MAX_DEPTH + 5
    chain = "".join(f"def f{i}(t):\n    return f{i + 1}(t)\n" for i in range(depth))
    chain += f"def f{depth}(t):\n    if t is None:\n        return comm.unbatched(tensor=t, peer=1, group=None)\n"
    files = {"pkg/comm.py": COMM, "pkg/chain.py": "from pkg import comm\n" + chain}
    out = analyse(tmp_path, files, "from pkg.chain import f0\nf0(None)\n", {})
    assert out["unbatched:isend"].reachable == "unknown"
    assert out["<cuts>"] == [{"function": f"pkg.chain.f{MAX_DEPTH}", "budget": "MAX_DEPTH",
                              "limit": MAX_DEPTH, "called_from": f"pkg.chain.f{MAX_DEPTH - 1}"}]


def test_a_package_importing_a_name_from_itself_resolves_to_nothing(tmp_path):
    files = {"pkg/__init__.py": "from pkg import missing\n", "pkg/comm.py": COMM}
    entry = "from pkg import missing\nmissing()\nfrom pkg.comm import batched\nbatched(tensor=DATA, peer=1, group=None)\n"
    out = analyse(tmp_path, files, entry, {})
    assert out["batched:P2POp"].reachable == "yes"
    assert out["<cuts>"] == []


def test_a_site_reached_under_a_condition_on_one_path_and_its_negation_on_another_is_reached(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/step.py": '''
        from pkg import comm
        def send(t):
            comm.unbatched(tensor=t, peer=1, group=None)
        def step(args, t):
            if args.overlap_p2p_comm:
                send(t)
            if args.pipeline_model_parallel_size != 2:
                comm.batched(tensor=t, peer=1, group=None)
        def other(args, t):
            if not args.overlap_p2p_comm:
                send(t)
            if 2 == args.pipeline_model_parallel_size:
                comm.batched(tensor=t, peer=1, group=None)
    '''}
    both = "from pkg.step import step, other\nstep(DATA, DATA)\nother(DATA, DATA)\n"
    out = analyse(tmp_path, files, both, {})
    assert out["unbatched:isend"].reachable == "yes"  # overlap_p2p_comm or not overlap_p2p_comm
    assert out["batched:P2POp"].reachable == "yes"  # x != 2 or 2 == x
    one = analyse(tmp_path, files, "from pkg.step import step\nstep(DATA, DATA)\n", {})
    assert one["unbatched:isend"].reachable == "unknown"
    assert one["unbatched:isend"].decided_by == ["overlap_p2p_comm"]
    assert one["batched:P2POp"].decided_by == ["pipeline_model_parallel_size == 2"]


def test_contradictory_guards_on_one_path_rule_the_site_out(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/step.py": '''
        from pkg import comm
        def step(args, t):
            if args.virtual_pipeline_model_parallel_size is None:
                if args.virtual_pipeline_model_parallel_size is not None:
                    comm.unbatched(tensor=t, peer=1, group=None)
                comm.batched(tensor=t, peer=1, group=None)
    '''}
    out = analyse(tmp_path, files, "from pkg.step import step\nstep(DATA, DATA)\n", {})
    assert out["unbatched:isend"].reachable == "no"
    assert out["batched:P2POp"].reachable == "unknown"


def test_values_derived_from_unknown_config_are_never_taken_for_one_another(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/step.py": '''
        from pkg import comm
        def step(args, t):
            if args.num_layers * 2 > 8:
                comm.unbatched(tensor=t, peer=1, group=None)
            if not (args.hidden_size * 2 > 8):
                comm.unbatched(tensor=t, peer=1, group=None)
    '''}
    out = analyse(tmp_path, files, "from pkg.step import step\nstep(DATA, DATA)\n", {})
    assert out["unbatched:isend"].reachable == "unknown"
    assert out["unbatched:isend"].decided_by == []  # nothing the config could name


def test_a_user_entry_explores_both_branches_of_its_unknown_parameters(tmp_path):
    from auditor.scan import entry_code

    files = {"pkg/comm.py": COMM, "pkg/sched.py": '''
        from pkg import comm
        class Schedule:
            def step(self, *args, target=None):
                if target is not None:
                    comm.batched(tensor=target, peer=1, group=None)
                else:
                    comm.unbatched(tensor=None, peer=1, group=None)
        def step(target=None):
            if target is None:
                comm.unbatched(tensor=None, peer=1, group=None)
    '''}
    for spec in ("pkg.sched:Schedule.step", "pkg.sched:step"):
        out = analyse(tmp_path, files, entry_code(spec), {})
        assert out["unbatched:isend"].reachable == "yes"
        expected = "yes" if spec.endswith("Schedule.step") else "unknown"  # no call path: probed
        assert out["batched:P2POp"].reachable == expected


def test_a_patch_installed_in_a_loop_body_applies_to_the_next_iteration(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/mine.py": '''
        from pkg import comm
        def mysend(tensor, peer, group):
            return comm.unbatched(tensor=tensor, peer=peer, group=group)
        def install():
            comm.batched = mysend
    ''', "pkg/step.py": '''
        from pkg import comm, mine
        def step(t, n):
            for i in range(n):
                comm.batched(tensor=t, peer=1, group=None)
                mine.install()
    '''}
    out = analyse(tmp_path, files, "from pkg.step import step\nstep(DATA, DATA)\n", {})
    assert out["batched:P2POp"].reachable == "yes"  # the first iteration
    assert out["unbatched:isend"].paths == [["step.step", "mine.mysend", "comm.unbatched"]]
    assert out["<patches>"] == [("pkg.comm.batched", "pkg.mine.mysend")]


def test_a_patch_installed_by_the_entry_applies_in_callees_and_their_loops(tmp_path):
    files = {"pkg/comm.py": COMM, "pkg/mine.py": '''
        from pkg import comm
        def mysend(tensor, peer, group):
            return comm.unbatched(tensor=tensor, peer=peer, group=group)
    ''', "pkg/step.py": '''
        from pkg import comm
        def inner(t):
            comm.batched(tensor=t, peer=1, group=None)
        def step(t, n):
            while n:
                inner(t)
    '''}
    entry = "from pkg import comm, mine\nfrom pkg.step import step, inner\ninner(DATA)\ncomm.batched = mine.mysend\nstep(DATA, DATA)\n"
    out = analyse(tmp_path, files, entry, {})
    assert out["batched:P2POp"].paths == [["step.inner", "comm.batched"]]  # before the patch only
    assert out["unbatched:isend"].paths == [["step.step", "step.inner", "mine.mysend", "comm.unbatched"]]


def test_code_nested_deeper_than_the_python_stack_is_a_budget_cut_not_a_crash(tmp_path):
    # Each function nests 90 `if`s around 150 nested calls: some 900 interpreter frames per
    # call level, so the chain passes PYTHON_DEPTH long before MAX_DEPTH.
    def function(i: int, last: int) -> str:
        head = f"def f{i}(t):\n" + "".join("    " * (k + 1) + "if t is not None:\n" for k in range(90))
        call = f"f{i + 1}(t)" if i < last else "comm.unbatched(tensor=t, peer=1, group=None)"
        return head + "    " * 91 + "str(" * 150 + call + ")" * 150 + "\n"

    chain = "".join(function(i, 29) for i in range(30))
    files = {"pkg/comm.py": COMM, "pkg/deep.py": "from pkg import comm\n" + chain}
    out = analyse(tmp_path, files, "from pkg.deep import f0\nf0(DATA)\n", {})
    assert out["unbatched:isend"].reachable == "unknown"
    assert [c["budget"] for c in out["<cuts>"]] == ["PYTHON_DEPTH"]
    assert "PYTHON_DEPTH budget" in out["unbatched:isend"].reason
