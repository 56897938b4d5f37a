"""Issue 22 item 9 on verl with `use_mbridge=True`: the `mbridge` package (not verl's own config
converter) builds the TransformerConfig the pipeline schedules read, and from mbridge 0.1.13 on
hard-codes `batch_p2p_comm = False` there (rules/mbridge.toml, mbridge/core/llm_bridge.py
LLMBridge._build_base_config); 0.1.0 leaves megatron-core's default True. Which releases such a
script can run on is narrowed by what it says: Hydra refuses `a.b.use_mbridge=True` on a verl
release without that key (0.4.x), and a comment's `mbridge>=0.13.0` is a bound.

The scripts are written after volcengine/verl examples/grpo_trainer/run_deepseek671b_math_megatron_80gb.sh
(commit b178a3cd56f58b2d502255daba591e92833930a7): `# ... now with mbridge>=0.13.0, we can directly
init model from huggingface ...`, PP=16, `+actor_rollout_ref.actor.megatron.override_transformer_config.*`
appends, `actor_rollout_ref.actor.megatron.use_mbridge=True`.
"""

from __future__ import annotations

import ast

import pytest

from auditor import rulebook, sources
from auditor.config import releases
from auditor.config.derive import derive
from auditor.config.launch import parse_launch
from auditor.errors import InputError

SCRIPT = """set -x
{comment}
python3 -m verl.trainer.main_ppo --config-path=./config --config-name='ppo_megatron_trainer'\\
    algorithm.adv_estimator=grpo \\
    actor_rollout_ref.model.path=/models/dsv3 \\
    +actor_rollout_ref.actor.megatron.override_transformer_config.num_layers_in_first_pipeline_stage=4 \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=16 \\
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=16 \\
    {mbridge}actor_rollout_ref.actor.megatron.use_mbridge=True \\
    {extra} \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=32
"""
COMMENT = "# no offline dist checkpoint needed, now with mbridge>=0.13.0, we can directly init model"


def _launch(comment: str = COMMENT, mbridge: str = "", extra: str = "trainer.total_epochs=100"):
    text = SCRIPT.format(comment=comment, mbridge=mbridge, extra=extra)
    return parse_launch(text, "run_deepseek671b_math_megatron_80gb.sh")


def _batching(mbridge: str, extra: str = "trainer.total_epochs=100"):
    eff = derive(_launch(extra=extra), {"verl": "0.6.1", "mbridge": mbridge, "megatron-core": "0.13.0"},
                 torch_version="2.10.0")
    return eff.values["batch_p2p_comm"]


@pytest.mark.parametrize("mbridge", ["0.1.13", "0.13.0", "0.13.1", "0.15.1"])
def test_mbridge_hard_codes_batch_p2p_comm_false(mbridge):
    value = _batching(mbridge)
    assert value.value is False
    assert "llm_bridge.py" in value.provenance


def test_the_first_mbridge_leaves_megatron_cores_default():
    assert _batching("0.1.0").value is True


def test_verls_override_is_applied_last_by_mbridge():
    """`bridge.set_extra_args(**override_transformer_config)`: extra_args update the base dict last."""
    extra = "+actor_rollout_ref.actor.megatron.override_transformer_config.batch_p2p_comm=True"
    assert _batching("0.15.1", extra=extra).value is True


@pytest.mark.wheels
def test_the_comment_bound_and_the_hydra_key_narrow_the_releases():
    plan = releases.plan(_launch())
    assert plan is not None
    newest, oldest = plan.combinations
    assert newest["mbridge"] == "0.15.1"
    assert oldest["mbridge"] == "0.13.0"  # `mbridge>=0.13.0` in a comment
    assert oldest["verl"] == "0.5.0"  # 0.4.x has no use_mbridge key: Hydra refuses the override


@pytest.mark.wheels
def test_an_install_comment_with_one_equals_sign_is_a_lower_bound():
    """volcengine/verl @ b178a3cd56 examples/grpo_trainer/run_qwen3-235b_megatron_96gb.sh:10:
    `# install mbridge=0.1.13 on all your node ...`: the release the authors ran, read as
    mbridge>=0.1.13 (a newer one is still judged); `TP=2` in a comment names no distribution."""
    launch = _launch(comment="# install mbridge=0.1.13 on all your node\n# TP=2 EP=4")
    assert launch.bounds == {"mbridge": ">=0.1.13"}
    plan = releases.plan(launch)
    assert plan is not None
    newest, oldest = plan.combinations
    assert (newest["mbridge"], oldest["mbridge"]) == ("0.15.1", "0.1.13")


@pytest.mark.wheels
def test_an_appended_key_runs_on_a_release_without_it():
    """`+key=value` adds the key where the release lacks it: Hydra accepts it there."""
    plan = releases.plan(_launch(comment="", mbridge="+"))
    assert plan is not None
    oldest = plan.combinations[-1]
    assert oldest["verl"] == "0.4.0"
    assert oldest["mbridge"] == "0.1.0"


# --- the rule against the real releases on PyPI ----------------------------------------------

def _base_config(version: str) -> ast.FunctionDef:
    root = sources.resolve(f"mbridge=={version}").root
    module = ast.parse((root / "mbridge/core/llm_bridge.py").read_text(encoding="utf-8"))
    return next(n for n in ast.walk(module)
                if isinstance(n, ast.FunctionDef) and n.name == "_build_base_config")


@pytest.mark.wheels
@pytest.mark.parametrize("version", rulebook.load("mbridge").section("framework")["verified"])
def test_every_verified_release_builds_the_config_as_the_rules_say(version):
    """The base dict's batch_p2p_comm (absent in 0.1.0, `batch_p2p_comm = False` from 0.1.13),
    then `kwargs` and verl's `extra_args` merged over it, last."""
    fn = _base_config(version)
    top = [ast.unparse(s) for s in fn.body]
    config = next(s for s in fn.body if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "base_config")
    pairs = {ast.literal_eval(k): ast.unparse(v) for k, v in zip(config.value.keys, config.value.values)}
    if rulebook.version_in(version, "<0.1.13"):
        assert "batch_p2p_comm" not in pairs
    else:
        assert "batch_p2p_comm = False" in top
        assert pairs["batch_p2p_comm"] == "batch_p2p_comm"
    updates = [t for t in top if t.startswith("base_config.update(")]
    assert updates[-2:] == ["base_config.update(kwargs)", "base_config.update(self.extra_args)"]


@pytest.mark.wheels
def test_a_bound_no_covered_release_meets_is_said(tmp_path):
    with pytest.raises(InputError, match=r"rules out every release .*mbridge>=9"):
        releases.plan(_launch(comment="# needs mbridge>=9.0"))
