"""The Megatron-Bridge recipe reader (config/frontends/bridge_recipe.py) on a recipe written after
NVIDIA-NeMo/Megatron-Bridge @ 067f987df0 src/megatron/bridge/recipes/gemma3_vl/h100/gemma3_vl.py:
straight-line literals are read with their line, a field set under a condition is unknown, a
recipe defined twice or not at all leaves every field unknown, and the run_recipe.py front end
(config/frontends/megatron_bridge.py) applies a trailing override over the recipe's value."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from auditor.bash.values import Symbolic
from auditor.config.frontends import param_writes
from auditor.config.frontends.bridge_recipe import RecipeReader
from auditor.config.frontends.megatron_bridge import BridgeRecipeReader
from auditor.config.launch import parse_launch

KEYS = ["model.pipeline_model_parallel_size", "model.virtual_pipeline_model_parallel_size", "comm_overlap"]
RECIPE = '''
def llama_pretrain_config():
    cfg = ConfigContainer(comm_overlap=None)
    cfg.model.pipeline_model_parallel_size = 4
    if cfg.model.seq_length > 4096:
        cfg.model.virtual_pipeline_model_parallel_size = 2
    return cfg
'''


def _reader(tmp_path: Path, *texts: str) -> RecipeReader:
    recipes = tmp_path / "src/megatron/bridge/recipes"
    recipes.mkdir(parents=True)
    for n, text in enumerate(texts):
        (recipes / f"r{n}.py").write_text(text, encoding="utf-8")
    return RecipeReader(tmp_path, ["src/megatron/bridge/recipes"], KEYS, [])


def test_a_straight_line_literal_is_read_with_its_line(tmp_path):
    values = _reader(tmp_path, RECIPE).read("llama_pretrain_config")
    pp = values["model.pipeline_model_parallel_size"]
    assert pp.value == "4" and pp.where.endswith("r0.py:4")


def test_a_field_set_under_a_condition_is_unknown(tmp_path):
    values = _reader(tmp_path, RECIPE).read("llama_pretrain_config")
    assert isinstance(values["model.virtual_pipeline_model_parallel_size"].value, Symbolic)


def test_a_recipe_defined_twice_or_missing_is_unknown_everywhere(tmp_path):
    twice = _reader(tmp_path, RECIPE, RECIPE).read("llama_pretrain_config")
    assert all(isinstance(v.value, Symbolic) for v in twice.values()) and set(twice) == set(KEYS)
    missing = RecipeReader(tmp_path, ["src/megatron/bridge/recipes"], KEYS, []).read("no_such_config")
    assert all(isinstance(v.value, Symbolic) for v in missing.values())


def test_run_recipe_applies_the_trailing_override_over_the_recipe(tmp_path):
    _reader(tmp_path, RECIPE)
    (tmp_path / "scripts/training").mkdir(parents=True)
    (tmp_path / "scripts/training/run_recipe.py").write_text("# runner\n", encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node=8 scripts/training/run_recipe.py --recipe "
                      "llama_pretrain_config model.pipeline_model_parallel_size=2\n", encoding="utf-8")
    config = parse_launch(script.read_text(encoding="utf-8"), str(script))
    assert config.style == BridgeRecipeReader.style
    assert config.flags["model.pipeline_model_parallel_size"].value == "2"
    assert "--recipe" not in config.flags["model.pipeline_model_parallel_size"].spelling


# After NVIDIA-NeMo/Megatron-Bridge @ 067f987df0 src/megatron/bridge/recipes/qwen_vl/h100/qwen3_vl.py:671
# (`apply_flex_dispatcher_backend(cfg.model, moe_flex_dispatcher_backend=None)` after the parallel
# sizes) and src/megatron/bridge/training/flex_dispatcher_backend.py:27-84 (it sets only the MoE
# dispatcher fields, through a helper of its own).
HANDED = '''
from megatron.bridge.training.flex_dispatcher_backend import apply_flex_dispatcher_backend


def qwen3_vl_8b_peft_config():
    cfg = ConfigContainer(comm_overlap=None)
    cfg.model.pipeline_model_parallel_size = 1
    cfg.model.virtual_pipeline_model_parallel_size = None
    apply_flex_dispatcher_backend(cfg.model, moe_flex_dispatcher_backend=None)
    return cfg
'''
FLEX = '''
def _fallback_to_alltoall(model_config):
    model_config.moe_token_dispatcher_type = "alltoall"
    model_config.moe_flex_dispatcher_backend = None


def apply_flex_dispatcher_backend(model_config, moe_flex_dispatcher_backend=None):
    num_moe_experts = getattr(model_config, "num_moe_experts", None)
    if num_moe_experts is None or num_moe_experts == 0:
        return
    if moe_flex_dispatcher_backend != "deepep":
        _fallback_to_alltoall(model_config)
        return
    model_config.moe_token_dispatcher_type = "flex"
'''


def _handed(tmp_path: Path, flex: str) -> dict:
    keys = [*KEYS, "model.moe_token_dispatcher_type"]
    (tmp_path / "src/megatron/bridge/recipes").mkdir(parents=True)
    (tmp_path / "src/megatron/bridge/recipes/r.py").write_text(HANDED, encoding="utf-8")
    (tmp_path / "src/megatron/bridge/training").mkdir(parents=True)
    (tmp_path / "src/megatron/bridge/training/flex_dispatcher_backend.py").write_text(flex, encoding="utf-8")
    return RecipeReader(tmp_path, ["src/megatron/bridge/recipes"], keys, []).read("qwen3_vl_8b_peft_config")


def test_a_helper_handed_the_model_leaves_unknown_only_what_it_sets(tmp_path):
    values = _handed(tmp_path, FLEX)
    assert values["model.pipeline_model_parallel_size"].value == "1"
    assert values["model.virtual_pipeline_model_parallel_size"].value == "None"
    dispatcher = values["model.moe_token_dispatcher_type"].value
    assert isinstance(dispatcher, Symbolic) and "may set model.moe_token_dispatcher_type" in str(dispatcher)


def test_a_helper_that_aliases_or_calls_a_method_leaves_all_of_it_unknown(tmp_path):
    aliased = FLEX.replace('    model_config.moe_token_dispatcher_type = "flex"',
                           "    other = model_config\n    other.pipeline_model_parallel_size = 2")
    values = _handed(tmp_path, aliased)
    assert isinstance(values["model.pipeline_model_parallel_size"].value, Symbolic)
    method = FLEX.replace('    model_config.moe_token_dispatcher_type = "flex"', "    model_config.finalize()")
    values = _handed(tmp_path / "m", method)
    assert isinstance(values["model.pipeline_model_parallel_size"].value, Symbolic)
    for n, body in enumerate(["model_config.__dict__.update(pipeline_model_parallel_size=2)",
                              'getattr(model_config, "pipeline_model_parallel_size").x = 2']):
        changed = FLEX.replace('    model_config.moe_token_dispatcher_type = "flex"', "    " + body)
        values = _handed(tmp_path / str(n), changed)
        assert isinstance(values["model.pipeline_model_parallel_size"].value, Symbolic), body


def test_param_writes_follows_the_helper_it_hands_the_parameter_to(tmp_path):
    path = tmp_path / "flex.py"
    tree = ast.parse(FLEX)
    fns = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    sets = param_writes.writes(fns["apply_flex_dispatcher_backend"], path, "model_config",
                               lambda name, _: (fns[name], path) if name in fns else None)
    # `num_moe_experts = getattr(model_config, "num_moe_experts", None)` keeps that field in a
    # variable: what is done through it is not followed
    assert sets == {"moe_token_dispatcher_type", "moe_flex_dispatcher_backend", "num_moe_experts"}


@pytest.mark.parametrize("body", [
    # an operand of or / and / if-else is the object itself
    "m = model_config or None\n    m.pipeline_model_parallel_size = 2",
    "(model_config and None or model_config).pipeline_model_parallel_size = 2",
    "(model_config if moe_flex_dispatcher_backend else None).pipeline_model_parallel_size = 2",
    # a getattr / type() result kept in a variable is the object (or the field it names)
    'setter = getattr(model_config, "__setattr__")\n    setter("pipeline_model_parallel_size", 2)',
    'pp = getattr(model_config, "pipeline_model_parallel_size")\n    pp.x = 2',
    "field = getattr(model_config, moe_flex_dispatcher_backend)\n    field.x = 2",
    "kind = type(model_config)\n    kind.pipeline_model_parallel_size = 2",
])
def test_an_alias_through_an_operator_or_getattr_leaves_it_unknown(tmp_path, body):
    values = _handed(tmp_path, FLEX.replace('    model_config.moe_token_dispatcher_type = "flex"', "    " + body))
    assert isinstance(values["model.pipeline_model_parallel_size"].value, Symbolic), body


def test_a_getattr_of_a_named_field_kept_in_a_variable_is_that_field(tmp_path):
    fn = ast.parse('def tune(cfg):\n    model = getattr(cfg, "model")\n    model.pipeline_model_parallel_size = 2\n'
                   '    if getattr(cfg, "train") is None:\n        return\n').body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert param_writes.writes(fn, tmp_path / "h.py", "cfg", lambda name, _: None) == {"model"}


@pytest.mark.parametrize("extra", [
    # a later definition replaces the first (Python calls the last one)
    "\n\ndef _fallback_to_alltoall(model_config):\n    model_config.pipeline_model_parallel_size = 2\n",
    # a nested def shadows the module one
    "",
])
def test_a_callee_bound_more_than_once_is_not_read(tmp_path, extra):
    flex = FLEX + extra if extra else FLEX.replace(
        "    if moe_flex_dispatcher_backend != \"deepep\":",
        "    def _fallback_to_alltoall(x):\n        x.pipeline_model_parallel_size = 2\n"
        "    if moe_flex_dispatcher_backend != \"deepep\":")
    values = _handed(tmp_path, flex)
    assert isinstance(values["model.pipeline_model_parallel_size"].value, Symbolic)
