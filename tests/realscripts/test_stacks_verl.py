"""Issue 22 item 9: verl as a stack. `python3 -m verl.trainer.main_ppo ... a.b.c=value` is a
verl run on megatron-core; verl builds the TransformerConfig itself and hard-codes
`batch_p2p_comm = False` there (rules/verl.toml), so a PP > 1 run never batches its pipeline P2P
and TORCH_DISTRIBUTED_DEBUG=DETAIL has nothing to un-batch: CLEAN, for that reason.

The scripts are written after volcengine/verl examples/ppo_trainer/run_deepseek_math_gsm8k_megatron.sh
(commit b178a3cd56f58b2d502255daba591e92833930a7): Hydra overrides, the actor's and ref's
pipeline size 2, `trainer.n_gpus_per_node=8 trainer.nnodes=1`, a trailing `$@`.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import rulebook, sources
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = {"verl": "0.6.1", "megatron-core": "0.13.0"}

SCRIPT = """set -x
export CUDA_DEVICE_MAX_CONNECTIONS=1
{pre}
python3 -m verl.trainer.main_ppo --config-path=./config --config-name='ppo_megatron_trainer'\\
    algorithm.adv_estimator=gae \\
    data.train_batch_size=1024 \\
    actor_rollout_ref.model.path=deepseek-ai/deepseek-llm-7b-chat \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \\
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=2 \\
    {extra} \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=1 \\
    trainer.total_epochs=100 $@
"""


def _write(tmp_path: Path, pre: str = "", extra: str = "trainer.critic_warmup=0") -> Path:
    path = tmp_path / "run_megatron.sh"
    path.write_text(SCRIPT.format(pre=pre, extra=extra), encoding="utf-8")
    return path


def test_the_module_is_the_program_not_the_first_override(tmp_path):
    path = _write(tmp_path)
    config = parse_launch(path.read_text(encoding="utf-8"), str(path))
    assert config.launcher == "python -m verl.trainer.main_ppo"
    assert config.flags["algorithm.adv_estimator"].value == "gae"  # not taken for a script
    assert (config.nproc_per_node, config.nnodes) == (8, 1)


def _effective(path: Path, versions=VERSIONS):
    return derive(parse_launch(path.read_text(encoding="utf-8"), str(path)), dict(versions), torch_version="2.10.0")


def test_verl_hard_codes_batch_p2p_comm_false(tmp_path):
    eff = _effective(_write(tmp_path))
    assert eff.values["pipeline_model_parallel_size"].value == 2
    assert eff.values["batch_p2p_comm"].value is False
    assert "config_converter.py" in eff.values["batch_p2p_comm"].source
    assert eff.values["distributed_backend"].value == "nccl"


def test_mbridge_builds_the_config_outside_the_rules(tmp_path):
    eff = _effective(_write(tmp_path, extra="actor_rollout_ref.actor.megatron.use_mbridge=True"))
    assert eff.values["batch_p2p_comm"].value is UNKNOWN


def test_an_override_of_the_transformer_config_wins(tmp_path):
    extra = "+actor_rollout_ref.actor.megatron.override_transformer_config.batch_p2p_comm=True"
    eff = _effective(_write(tmp_path, extra=extra))
    assert eff.values["batch_p2p_comm"].value is True


def test_a_verl_release_outside_the_rules_leaves_batching_unknown(tmp_path):
    eff = _effective(_write(tmp_path), {"verl": "0.7.0", "megatron-core": "0.13.0"})
    assert eff.values["batch_p2p_comm"].value is not False


@pytest.mark.wheels
def test_pp2_with_detail_is_clean_because_nothing_is_batched(tmp_path):
    script = _write(tmp_path, pre="export TORCH_DISTRIBUTED_DEBUG=DETAIL")
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(script), "--torch", "2.10.0",
         "--target", "verl==0.6.1", "--target", "megatron-core==0.13.0", "--format", "json"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    doc = json.loads(proc.stdout)
    assert doc["verdict"]["status"] == "clean", proc.stdout[-2000:]
    assert doc["config"]["effective"]["batch_p2p_comm"] is False
    assert "none of them batched (verl: batch_p2p_comm = False" in doc["verdict"]["headline"]
    reached = [s for s in doc["sites"] if s["reachable"] == "yes"]
    assert reached and not any(s.get("runs_batched") for s in reached)


# --- the rule against the real releases on PyPI ----------------------------------------------

def _base_config(version: str) -> ast.FunctionDef:
    root = sources.resolve(f"verl=={version}").root
    module = ast.parse((root / "verl/models/mcore/config_converter.py").read_text(encoding="utf-8"))
    return next(n for n in ast.walk(module)
                if isinstance(n, ast.FunctionDef) and n.name == "_get_base_transformer_config")


@pytest.mark.wheels
@pytest.mark.parametrize("version", rulebook.load("verl").section("framework")["verified"])
def test_every_verified_release_hard_codes_the_line(version):
    """`batch_p2p_comm = False` unconditionally at the function's top level, passed as the
    config's `batch_p2p_comm`, then the user's overrides merged over it."""
    fn = _base_config(version)
    top = [ast.unparse(s) for s in fn.body]
    assert "batch_p2p_comm = False" in top
    config = next(s for s in fn.body if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "base_config")
    pairs = {ast.literal_eval(k): ast.unparse(v) for k, v in zip(config.value.keys, config.value.values)}
    assert pairs["batch_p2p_comm"] == "batch_p2p_comm"
    assert "base_config.update(override_transformer_config_kwargs)" in top


@pytest.mark.wheels
def test_the_first_release_outside_defaults_to_mbridge():
    """0.7.0 makes use_mbridge default True: the mbridge package builds the config, which the
    rules do not read, so the rules stop at 0.6.1."""
    root = sources.resolve("verl==0.7.0").root
    text = (root / "verl/trainer/config/engine/megatron.yaml").read_text(encoding="utf-8")
    assert "\nuse_mbridge: True" in text
    assert rulebook.version_in("0.7.0", ">=0.4.0,<=0.6.1") is False


@pytest.mark.wheels
def test_pp1_needs_no_batching_setting(tmp_path):
    """volcengine/verl examples/grpo_trainer/run_qwen3moe-30b_megatron_96gb.sh (commit b178a3cd5):
    `COMMON_PP=${COMMON_PP:-1}`, ACTOR_PP=${ACTOR_PP:-$COMMON_PP}, USE_MBRIDGE=True. mbridge's
    batch_p2p_comm is unknown (0.1.0 leaves megatron-core's True, 0.1.13 on set False), but at
    PP=1 no pipeline P2P runs, so the verdict does not rest on it."""
    pre = "COMMON_PP=${COMMON_PP:-1}\nACTOR_PP=${ACTOR_PP:-$COMMON_PP}\nUSE_MBRIDGE=True"
    text = SCRIPT.format(pre=pre, extra="actor_rollout_ref.actor.megatron.use_mbridge=$USE_MBRIDGE")
    script = tmp_path / "run_qwen3moe.sh"
    script.write_text(text.replace("pipeline_model_parallel_size=2", "pipeline_model_parallel_size=${ACTOR_PP}"),
                      encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(script), "--torch", "2.10.0",
         "--target", "verl==0.6.1", "--target", "megatron-core==0.13.0", "--format", "json"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    doc = json.loads(proc.stdout)
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 1
    # mbridge, which no target gives, is judged on its covered releases (scan fills the stack):
    # 0.1.0 leaves megatron-core's True, the newer ones set False; clean on each, at PP=1
    basis = doc["config"]["release_basis"]
    assert basis["free"] == ["mbridge"]
    assert {c["status"] for c in basis["combinations"]} == {"clean"}
    assert doc["verdict"]["status"] == "clean", doc["verdict"]
