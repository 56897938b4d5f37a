"""verl takes the model's sizes from the checkpoint `actor_rollout_ref.model.path` names (issue 22:
the wrong verdicts of the sealed batches were runs whose layer count p2paudit did not know).

verl's workers build the TransformerConfig from that path's Hugging Face config (converter, mbridge
or Megatron-Bridge), then merge `override_transformer_config` over it (rules/verl.toml): the layer
count is rules/models.toml's fact of the model the path names, and the uneven-split keys the
overrides give decide how the layers split. Written after volcengine/verl@b178a3cd56
examples/ppo_trainer/run_moonlight16b_a3b_gsm8k_megatron.sh (PP 2, :38, :79;
`num_layers_in_last_pipeline_stage=13`, :77), examples/grpo_trainer/run_moonlight16b_math_megatron.sh
(`HF_MODEL_PATH=moonshotai/Moonlight-16B-A3B`, :5, :22) and
examples/grpo_trainer/run_qwen3-235b_megatron_96gb.sh (`MODEL_PATH=$RAY_DATA_HOME/models/Qwen3-235B-A22B`,
:44, RAY_DATA_HOME from $HOME, :42; PP 8; account_for_loss/embedding_in_pipeline_split=True, :162-163).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = {"verl": "0.6.1", "megatron-core": "0.13.0"}

SCRIPT = """set -x
RAY_DATA_HOME=${{RAY_DATA_HOME:-"${{HOME}}/verl"}}
MODEL_PATH={model}
python3 -m verl.trainer.main_ppo --config-path=./config --config-name='ppo_megatron_trainer'\\
    actor_rollout_ref.model.path=$MODEL_PATH \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size={pp} \\
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size={pp} \\
    {extra} \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=2
"""
MOONLIGHT = "moonshotai/Moonlight-16B-A3B"
QWEN235 = "$RAY_DATA_HOME/models/Qwen3-235B-A22B"
OVERRIDE = "+actor_rollout_ref.actor.megatron.override_transformer_config."


def _write(tmp_path: Path, model: str, pp: int, extra: str = "trainer.critic_warmup=0") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "run_megatron.sh"
    path.write_text(SCRIPT.format(model=model, pp=pp, extra=extra), encoding="utf-8")
    return path


def _values(path: Path):
    return derive(parse_launch(path.read_text(encoding="utf-8"), str(path)), dict(VERSIONS),
                  torch_version="2.10.0").values


def test_the_layer_count_is_the_model_the_actor_loads(tmp_path: Path) -> None:
    values = _values(_write(tmp_path, MOONLIGHT, 3))
    assert values["num_layers"].value == 27 and "MoonlightModelProvider16B" in values["num_layers"].source


def test_a_directory_under_an_unknown_root_still_names_its_model(tmp_path: Path) -> None:
    """`$RAY_DATA_HOME/models/Qwen3-235B-A22B` with $HOME not known: the last component is written."""
    values = _values(_write(tmp_path, QWEN235, 8))
    assert values["num_layers"].value == 94


def test_the_overrides_give_the_uneven_split(tmp_path: Path) -> None:
    extra = f"{OVERRIDE}num_layers_in_last_pipeline_stage=13 {OVERRIDE}account_for_loss_in_pipeline_split=True"
    values = _values(_write(tmp_path, MOONLIGHT, 2, extra))
    assert values["num_layers_in_last_pipeline_stage"].value == 13
    assert values["account_for_loss_in_pipeline_split"].value is True
    assert values["num_layers_in_first_pipeline_stage"].value is None  # megatron-core's default


def test_a_model_not_named_or_not_known_leaves_the_sizes_unknown(tmp_path: Path) -> None:
    values = _values(_write(tmp_path / "a", "Qwen/Qwen2-7B-Instruct", 2))
    assert values["num_layers"].value is UNKNOWN and "names no such model" in values["num_layers"].provenance
    values = _values(_write(tmp_path / "b", "$LLM", 2))
    assert values["num_layers"].value is UNKNOWN and "not known statically" in values["num_layers"].provenance
    assert not isinstance(values["num_layers"].value, Symbolic)
    values = _values(_write(tmp_path / "c", "$RAY_DATA_HOME/models/MiMo-7B-RL", 2))
    assert values["num_layers"].value is UNKNOWN and "names no such model" in values["num_layers"].provenance


def _scan(path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(path), "--torch", "2.10.0",
         "--target", "verl==0.6.1", "--target", "megatron-core==0.13.0", "--format", "json"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    return json.loads(proc.stdout)


@pytest.mark.wheels
def test_27_layers_over_pp2_does_not_start_unless_the_last_stage_takes_13(tmp_path: Path) -> None:
    bad = _scan(_write(tmp_path / "a", MOONLIGHT, 2))["verdict"]
    assert bad["headline"].startswith("DOES NOT START: 27 layers do not split evenly over pipeline_model_parallel_size 2")
    good = _scan(_write(tmp_path / "b", MOONLIGHT, 2, f"{OVERRIDE}num_layers_in_last_pipeline_stage=13"))["verdict"]
    assert good["status"] == "clean", good["headline"]
    assert not any("num_layers" in u["what"] for u in good.get("startup_undecided", []))


@pytest.mark.wheels
def test_94_layers_with_the_loss_and_embedding_accounted_split_over_pp8(tmp_path: Path) -> None:
    both = f"{OVERRIDE}account_for_loss_in_pipeline_split=True {OVERRIDE}account_for_embedding_in_pipeline_split=True"
    assert _scan(_write(tmp_path / "a", QWEN235, 8, both))["verdict"]["status"] == "clean"
    headline = _scan(_write(tmp_path / "b", QWEN235, 8))["verdict"]["headline"]
    assert headline.startswith("DOES NOT START: 94 layers do not split evenly over pipeline_model_parallel_size 8")


@pytest.mark.wheels
def test_an_unknown_model_leaves_the_split_undecided_naming_the_set(tmp_path: Path) -> None:
    verdict = _scan(_write(tmp_path, "Qwen/Qwen2-7B-Instruct", 2))["verdict"]
    assert not verdict["headline"].startswith("DOES NOT START")
    assert any("even-split" in u["what"] and u["decide"] == "--set num_layers=VALUE"
               for u in verdict["startup_undecided"]), verdict["startup_undecided"]
