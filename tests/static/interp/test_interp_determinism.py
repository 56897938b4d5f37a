"""The same scan gives the same document in every run: the interpreter's calling contexts do not
depend on the order a set iterates in, which changes with PYTHONHASHSEED (names) and with
addresses (objects, closures). DeepSpeed's pipeline scan was the one that moved: 680 to 784
function contexts between seeds before its walks took values in one order (`values.ordered`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "deepspeed_pipe_pp2.sh"


def scan_in_fresh_process(seed: str, out: Path) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(SCRIPT),
                    "--target", "deepspeed==0.16.0", "--torch", "2.13.0", "--jobs", "1",
                    "--format", "json", "-o", str(out)], env=env, capture_output=True)
    assert done.returncode in (0, 1), done.stderr  # 1: the scan has findings
    doc = json.loads(out.read_text())
    doc["analysis"].pop("seconds")
    return doc


def test_a_scan_is_the_same_under_other_hash_seeds(release, tmp_path):
    release("deepspeed==0.16.0")  # fetched once, before the timed runs
    docs = [scan_in_fresh_process(seed, tmp_path / f"scan-{seed}.json") for seed in ("1", "2")]
    assert docs[0]["analysis"]["functions_interpreted"] == docs[1]["analysis"]["functions_interpreted"]
    assert docs[0]["sites"] == docs[1]["sites"]


# DeepSpeed's PipelineEngine (deepspeed/runtime/pipe/engine.py, deepspeed 0.16.0): the P2P
# methods `_exec_send_activations`, `_exec_recv_activations`, ... each call helpers on `self`.
# Each is probed with an instance of its own, which the walk drops when the probe ends; CPython
# may hand its address to the next probe's instance.
ENGINE = '''
import torch.distributed as dist

class Engine:
    def _group(self):
        return self.grid.pp_group

    def _send(self, buf):
        dist.send(buf, 1, group=self._group())

    def _recv(self, buf):
        dist.recv(buf, 0, group=self._group())
'''


def test_a_later_object_at_a_dead_objects_address_gets_its_own_contexts(tmp_path, monkeypatch):
    """The memo is keyed by object identity. An address alone is not one: once its object is
    freed, the next object may get it and be taken for the first, its calls answered from the
    first object's walk and never interpreted. Rare in a real run (the allocator decides), so
    here every probe instance has one address, as when CPython reuses it each time."""
    import builtins
    from textwrap import dedent

    from auditor.rulebook import interpreter
    from auditor.static.interp import calls, shared
    from auditor.static.interp.callgraph import Interpreter
    from auditor.static.interp.program import Program
    from auditor import sources
    from auditor.static.interp.values import Obj

    def reused(v: object) -> int:
        return 1 if isinstance(v, Obj) and v.where == "probe" else builtins.id(v)

    monkeypatch.setattr(shared, "id", reused, raising=False)
    monkeypatch.setattr(calls, "id", reused, raising=False)
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "engine.py").write_text(dedent(ENGINE))
    rules, _, _ = interpreter.load({"megatron-core": "0.17.0"})
    program = Program([sources.resolve(str(root))], jobs=0)
    try:
        interp = Interpreter(program, {}, rules)
        for method in ("Engine._send", "Engine._recv"):
            assert interp.probe("pkg.engine", method) is not None
        helper = [n for n in interp.nodes if n.qualname == "Engine._group"]
        assert len(helper) == 2  # one per probe instance
    finally:
        program.close()


def test_values_alike_but_for_their_closure_or_instance_keep_the_order_the_walk_made_them():
    """`ordered` decides which value's turn runs first (and so which contexts the walk makes).
    Values with one name used to tie and keep their set's order, which follows addresses: a
    function defined in two calls of its enclosing function (a closure each), two instances
    made at one place in two contexts. They now keep the order the walk made them in."""
    from auditor.static.interp.values import Func, Klass, Obj, ordered

    inner = [Func("build.<locals>.step", "pkg.engine", closure) for closure in range(1, 9)]
    assert ordered(frozenset(inner)) == inner
    freed = [Obj(Klass("Engine", "pkg.engine"), "old") for _ in range(16)]
    del freed  # the next objects reuse these addresses, newest freed first
    made = [Obj(Klass("Engine", "pkg.engine"), "pkg.engine.build:Engine()") for _ in range(8)]
    assert ordered(frozenset(made)) == made


def test_a_type_test_asks_about_classes_in_one_order():
    """`isinstance(unwrapped_model, GPTModel)` in megatron-core 0.17.0's
    megatron/core/pipeline_parallel/combined_1f1b.py (the megatron_lm_gpt_pp2 example's scan): the first value it cannot decide ends the
    test; a function among the values asks whether GPTModel's hierarchy is closed, which imports
    its bases' modules, and the walk then has run their top levels (4 contexts more or fewer, in
    a run of its own). Which value came first followed the set's hash order."""
    from auditor.static.interp import typetests
    from auditor.static.interp.values import Data, Func, Klass

    class Recording:
        def __init__(self) -> None:
            self.asked: list[Klass] = []

        def mro(self, k: Klass) -> list[Klass]:
            return [k]

        def closed(self, k: Klass) -> bool:
            self.asked.append(k)
            return True

        def defines(self, k: Klass, attr: str) -> bool:
            return False

    gpt = frozenset({Klass("GPTModel", "megatron.core.models.gpt.gpt_model")})
    asked = set()
    for i in range(16):  # values whose hashes fall either way of the function's
        classes = Recording()
        typetests.decide("isinstance", [frozenset({Data(f"model {i}"), Func("wrapped", "pkg.m")}), gpt],
                         None, classes)
        asked.add(bool(classes.asked))
    assert len(asked) == 1


# A parent/child tree of dicts, each child holding its parent (the shape of a run's state with
# its sub-runs): the dict reaches itself. Written for this test, after the review's repro.
TREE = '''
import os

def helper(opts):
    return opts

def build():
    state = {"name": "run", "children": {}}
    child = {"parent": state}
    state["children"]["c0"] = child
    opts = state if os.environ.get("RESUME") else {"name": "fresh"}
    if isinstance(opts, dict):
        helper(opts)
'''


def test_a_dict_that_reaches_itself_is_ordered_and_passed_on(tmp_path):
    """`isinstance` orders the two dicts `opts` can be, and `helper(opts)` keys its memo by
    them: both used to follow a dict's entries into the dict again, without end (RecursionError,
    the scan's exit 2)."""
    from textwrap import dedent

    from auditor import sources
    from auditor.rulebook import interpreter
    from auditor.static.interp.callgraph import Interpreter
    from auditor.static.interp.program import Program

    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "tree.py").write_text(dedent(TREE))
    rules, _, _ = interpreter.load({"megatron-core": "0.17.0"})
    program = Program([sources.resolve(str(root))], jobs=0)
    try:
        interp = Interpreter(program, {}, rules)
        assert interp.probe("pkg.tree", "build") is not None
        assert [n.qualname for n in interp.nodes if n.qualname == "helper"] == ["helper"]
    finally:
        program.close()


def test_dicts_are_ordered_by_when_they_were_made_not_by_their_entries():
    """A dict shared down a chain (each holding the one before under two keys) was keyed once
    per path: twice the time per link. Two dicts with equal entries tied and kept address order."""
    import time

    from auditor.static.interp.values import ConstValue, DictV, ordered

    made = [DictV({"name": frozenset({ConstValue("fresh")})}) for _ in range(8)]
    assert ordered(frozenset(made)) == made
    selfish = DictV()
    selfish.items["self"] = frozenset({selfish})
    assert ordered(frozenset({selfish, made[0]})) == [made[0], selfish]
    link = DictV()
    for _ in range(18):
        link = DictV({"a": frozenset({link}), "b": frozenset({link})})
    start = time.perf_counter()
    ordered(frozenset({link, DictV()}))
    assert time.perf_counter() - start < 1


def test_a_memo_key_of_a_dict_that_reaches_itself_ends():
    """`value_key` keys a dict by its entries (two calls with equal `**kwargs` share a context);
    a dict met again inside itself is keyed there by which dict it is."""
    from auditor.static.interp.shared import value_key
    from auditor.static.interp.values import ConstValue, DictV

    state = DictV({"name": frozenset({ConstValue("run")})})
    state.items["children"] = frozenset({DictV({"parent": frozenset({state})})})
    assert value_key(frozenset({state})) == value_key(frozenset({state}))
    twin = DictV({"name": frozenset({ConstValue("run")})})
    twin.items["children"] = frozenset({DictV({"parent": frozenset({twin})})})
    assert value_key(frozenset({state})) != value_key(frozenset({twin}))
    assert value_key(frozenset({DictV({"a": frozenset({ConstValue(1)})})})) == \
        value_key(frozenset({DictV({"a": frozenset({ConstValue(1)})})}))


def test_two_super_calls_are_ordered_by_their_instances():
    """`super()` in one method called on two instances (two contexts) holds each instance; the
    two used to tie (their text names the class and place alone) and keep address order."""
    from auditor.static.interp.values import Klass, Obj, _Super, ordered

    freed = [Obj(Klass("Engine", "pkg.engine"), "old") for _ in range(16)]
    del freed
    made = [_Super("Engine", "pkg.engine", frozenset({Obj(Klass("Engine", "pkg.engine"), "pkg.m:Engine()")}))
            for _ in range(8)]
    assert ordered(frozenset(made)) == made
