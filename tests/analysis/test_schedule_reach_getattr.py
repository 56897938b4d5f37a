"""A `getattr` of a computed name, or a class handed to `typing`, does not make the walk from an
inference entry uncertain unless what it gives may run (analysis/schedule_reach.py,
static/interp/calls.py): the uncertainty is a method the walk cannot name being called.

Written after NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a
scripts/inference/text_generation.py:114-122 (`for label, attribute in (("Prompt log probs",
"prompt_log_probs"), ...): value = getattr(output, attribute, None)`, the value only printed) and
src/megatron/bridge/models/conversion/auto_bridge.py:63 (`TypeVar("MegatronModelT",
bound=MegatronModule)`), the walk of examples/models/falcon_h1/inference.sh (`--pp 1`): before,
either made the walk uncertain and the inference run read CLEAN instead of NOT A PIPELINE RUN. A
computed getattr whose result is called, or handed to code not read, keeps the run (fail closed).
"""

from __future__ import annotations

import pytest

from auditor.analysis.schedule_reach import KIND
from tests.analysis.test_schedule_reach_stage_guard import _checkout, _scan

# the printed results of text_generation.py:114-122, and auto_bridge.py:63's TypeVar
PRINTED = """
import typing

ModelT = typing.TypeVar("ModelT", bound=Wrapper)


def show(output):
    for label, attribute in (("Prompt log probs", "prompt_log_probs"), ("Generated", "generated_log_probs")):
        if getattr(output, attribute, None) is not None:
            print(label, str(getattr(output, attribute, None)))
"""


def _with(tmp_path, tail: str, call: str):
    script = _checkout(tmp_path, "1")
    serve = script.parent / "serve.py"
    text = serve.read_text(encoding="utf-8").replace(
        "\n\ndef main():", f"\n{tail}\n\ndef main():").replace(
        "    Wrapper(None).run_one_forward_step", f"    {call}\n    Wrapper(None).run_one_forward_step")
    serve.write_text(text, encoding="utf-8")
    return script


def test_computed_getattr_only_read_keeps_the_walk_certain(capsys, monkeypatch, tmp_path):
    _, doc = _scan(capsys, monkeypatch, _with(tmp_path, PRINTED, "show(sys)"))
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "not-pipeline", head
    assert any(f["kind"] == KIND for f in doc["findings"]), head


@pytest.mark.heavy
@pytest.mark.parametrize("tail, call", [
    # the computed attribute called: it may be a schedule's entry
    ("def go(obj, name):\n    getattr(obj, name)()\n", "go(sys, sys.argv[1])"),
    # called through an attribute of it, or after being passed on
    ("def go(obj, name):\n    getattr(obj, name).step()\n", "go(sys, sys.argv[1])"),
    ("def run(f):\n    f()\n\n\ndef go(obj, name):\n    run(getattr(obj, name))\n", "go(sys, sys.argv[1])"),
    # handed to code not read, which may call it
    ("import threading\n\n\ndef go(obj, name):\n    threading.Thread(target=getattr(obj, name)).start()\n",
     "go(sys, sys.argv[1])"),
    # its value carried on where the walk does not track it (h32-review2 getattr/w1..w7): a pair,
    # a one-tuple unpacked, an attribute, *args, a generator, a walrus, or only assigned and read
    ("def go(obj, name):\n    n, f = name, getattr(obj, name)\n    f()\n", "go(sys, sys.argv[1])"),
    ("def go(obj, name):\n    f, = (getattr(obj, name),)\n    f()\n", "go(sys, sys.argv[1])"),
    ("import types\n\n\ndef go(obj, name):\n    ns = types.SimpleNamespace()\n    ns.f = getattr(obj, name)\n"
     "    ns.f()\n", "go(sys, sys.argv[1])"),
    ("def run(*fs):\n    fs[0]()\n\n\ndef go(obj, name):\n    run(*[getattr(obj, name)])\n", "go(sys, sys.argv[1])"),
    ("def gen(obj, name):\n    yield getattr(obj, name)\n\n\ndef go(obj, name):\n    for f in gen(obj, name):\n"
     "        f()\n", "go(sys, sys.argv[1])"),
    ("def go(obj, name):\n    if (f := getattr(obj, name)):\n        f()\n", "go(sys, sys.argv[1])"),
    ("def go(obj, name):\n    value = getattr(obj, name, None)\n    print(value)\n", "go(sys, sys.argv[1])"),
    # a class of the script handed to a builtin that builds it (h32-review2 getattr/k1)
    ("class Step:\n    def __init__(self, n):\n        pass\n", "list(map(Step, [4]))"),
])
def test_computed_getattr_that_may_run_keeps_the_run(capsys, monkeypatch, tmp_path, tail, call):
    _, doc = _scan(capsys, monkeypatch, _with(tmp_path, tail, call))
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] != "not-pipeline", head
    assert not any(f["kind"] == KIND for f in doc["findings"]), head


# text_generation.py:33 `from megatron.core.inference.apis import MegatronLLM, SamplingParams`,
# a module megatron-core 0.19 has and 0.17.0 lacks. A module the release judged lacks is no proof
# the import fails: the run may use another megatron-core (Megatron-LM main's
# megatron.core.inference.disaggregation.engine is in neither 0.19.2 nor 0.17.0; h32-review2), so
# its calls stay code not read and the walk uncertain.
@pytest.mark.parametrize("module, certain", [
    ("megatron.core.pipeline_parallel.not_in_this_release", False),  # maybe another release's
    ("megatron.core.parallel_state.helpers", False),  # under the checkout's own file: not all listed
    ("fancylib.engine", False),  # a package no source holds
])
def test_import_of_a_module_a_release_lacks(capsys, monkeypatch, tmp_path, module, certain):
    tail = f"from {module} import Engine\n"
    _, doc = _scan(capsys, monkeypatch, _with(tmp_path, tail, "Engine(sys.argv).generate()"))
    head = doc["verdict"]["headline"]
    assert (doc["verdict"]["status"] == "not-pipeline") is certain, head
