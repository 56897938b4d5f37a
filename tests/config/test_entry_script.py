"""The shared entry-script reader (config/entry_script.py): what a call that leaves a parameter
out states under each kind of rule, and keyword-only parameters. The calls are NeMo 2's
(NVIDIA/NeMo 8cfedd7203462cb251a914e700e5605444277561 tests/collections/llm/gpt_finetuning.py:53,
megatron_gpt_pretraining.py:87) and DeepSpeedExamples' (training/pipeline_parallelism/train.py)."""

from __future__ import annotations

import ast

import pytest

from auditor.config.entry_script import argparse_options, call_value, namespaces
from auditor.config.expr import UNKNOWN
from auditor.config.model import LaunchConfig

SCRIPT = """
import argparse
from nemo import lightning as nl
parser = argparse.ArgumentParser()
parser.add_argument('--pp_size', type=int, default=1)
args = parser.parse_args()
strategy = nl.MegatronStrategy({args})
trainer = nl.Trainer({trainer})
"""
SPEC = {"callee": ["nemo.lightning.MegatronStrategy"], "param": "pipeline_model_parallel_size",
        "position": 1, "key": "pipeline_model_parallel_size", "source": "megatron_strategy.py:240",
        "code": "pipeline_model_parallel_size: int = 1,"}


def _value(args: str, **spec):
    tree = ast.parse(SCRIPT.format(args=args, trainer=""))
    return call_value(tree, {**SPEC, **spec}, argparse_options(tree), LaunchConfig(path="run.sh", launcher="", command_line=1))


def test_by_keyword_by_position_and_from_argparse():
    assert _value("pipeline_model_parallel_size=4")[0] == 4
    assert _value("1, 2")[0] == 2
    value, why, line = _value("pipeline_model_parallel_size=args.pp_size")
    assert (value, line) == (1, 7) and "the default of --pp_size" in why


def test_left_out_states_the_rule_s_default_or_none_or_unknown():
    assert _value("", default=1)[0] == 1 and "its default 1" in _value("", default=1)[1]
    assert _value("")[0] is None
    assert _value("", unset="unknown")[0] is UNKNOWN


def test_starred_or_double_starred_arguments_may_pass_it():
    assert _value("*sizes") is None and _value("**kw") is None


def test_a_keyword_only_parameter_is_never_read_by_position():
    spec = {**{k: v for k, v in SPEC.items() if k != "position"},
            "callee": ["nemo.lightning.Trainer"], "param": "devices", "default": "auto"}
    for trainer, devices in [("devices=2", 2), ("'gpu', 'auto', 4", "auto")]:
        tree = ast.parse(SCRIPT.format(args="", trainer=trainer))
        assert call_value(tree, spec, {}, LaunchConfig(path="run.sh", launcher="", command_line=1))[0] == devices


def test_only_the_parsed_namespace_s_attributes_are_options():
    """review r39-bridge: `cfg.pp_size` of another object read as --pp_size's default."""
    assert _value("pipeline_model_parallel_size=cfg.pp_size") is None
    text = ("import argparse\np = argparse.ArgumentParser()\n"
            "def get():\n    return p.parse_args()\ndef run(opts):\n    pass\n"
            "a = get()\nb, rest = p.parse_known_args()\nc = p.parse_known_args()[0]\nrun(a)\ncfg = load(a)\n")
    assert namespaces(ast.parse(text)) == {"a", "b", "c", "opts"}


@pytest.mark.parametrize("rebinding", [
    "args = types.SimpleNamespace(**json.load(open('run.json')))",  # review r40-holes item 1
    "args = argparse.Namespace(**cfg)",
    "args = Config.fromfile(args.config)",
    "for args in runs:\n        pass",
    "with open('x') as args:\n        pass",
    "show(cfg)",  # the function's parameter handed another object
])
def test_a_namespace_name_bound_to_anything_else_is_none(rebinding):
    """Was {"args"}: a name read by name only, bound also to another object, is not the options."""
    text = ("import argparse\np = argparse.ArgumentParser()\n"
            f"def show(args):\n    print(args.pp)\ndef main(args):\n    {rebinding}\n    show(args)\n"
            "main(p.parse_args())\n")
    assert namespaces(ast.parse(text)) == set()


def test_a_namespace_name_declared_or_unpacked_stays_the_options():
    text = ("import argparse\np = argparse.ArgumentParser()\nargs: argparse.Namespace\n"
            "def main(args):\n    pass\nargs, rest = p.parse_known_args()\nmain(args=args)\n")
    assert namespaces(ast.parse(text)) == {"args"}


@pytest.mark.parametrize("helper", [
    "def get():\n    o = p.parse_args()\n    if o.config:\n        o = types.SimpleNamespace(**json.load(open(o.config)))\n"
    "    return o\n",  # review r41-interp item 1
    "def get():\n    o = p.parse_args()\n    if o.config:\n        return load(o.config)\n    return o\n",
    "def get():\n    return p.parse_args(namespace=cfg)\n",
])
def test_a_helper_returning_anything_else_gives_no_namespace(helper):
    """Was {"args"}: `returning` was filled once and never taken back."""
    text = f"import argparse\np = argparse.ArgumentParser()\n{helper}def main(args):\n    pass\nmain(get())\n"
    assert "args" not in namespaces(ast.parse(text))


@pytest.mark.parametrize("elsewhere", [
    "def helper():\n    args = get_config()\n    return args.x\n",  # Megatron-style `args = get_args()`
    "xs = [args.x for args in runs]\n",  # a comprehension's variable is its own
    "def helper(args):\n    pass\nhelper(cfg)\n",  # another function's parameter
])
def test_a_name_bound_in_another_scope_stays_the_namespace(elsewhere):
    """Was set(): review r41-interp item 2, a rebinding counts only where the namespace name lives."""
    text = f"import argparse\np = argparse.ArgumentParser()\n{elsewhere}args = p.parse_args()\n"
    assert namespaces(ast.parse(text)) == {"args"}


@pytest.mark.parametrize("rebinding", [
    "args = get_config()\n",
    "def reset():\n    global args\n    args = get_config()\n",
])
def test_a_rebinding_where_the_namespace_lives_still_counts(rebinding):
    text = f"import argparse\np = argparse.ArgumentParser()\nargs = p.parse_args()\n{rebinding}"
    assert namespaces(ast.parse(text)) == set()
