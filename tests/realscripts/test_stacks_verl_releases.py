"""Issue 22 item 2 on verl: with no verl release stated, the scan judges the newest and the oldest
covered release. verl 0.4.x has no `use_mbridge` (mbridge arrives in 0.5.0): its Megatron workers
always build the TransformerConfig with verl's own config converter, which hard-codes
`batch_p2p_comm = False` (verl 0.4.1 verl/models/mcore/config_converter.py:43). That the later
`use_mbridge` switch does not exist there is a fact of the release, not a setting the rules miss:
it must not read "outside the releases the rules cover" and so make the releases disagree.

The script is written after volcengine/verl examples/ppo_trainer/run_deepseek_math_gsm8k_megatron.sh
(commit b178a3cd56f58b2d502255daba591e92833930a7): Hydra overrides, the actor's and ref's pipeline
size 2, `trainer.n_gpus_per_node=8 trainer.nnodes=1`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.derive import derive
from auditor.config.launch import parse_launch

SCRIPT = """set -x
export CUDA_DEVICE_MAX_CONNECTIONS=1
python3 -m verl.trainer.main_ppo --config-path=./config --config-name='ppo_megatron_trainer'\\
    algorithm.adv_estimator=gae \\
    actor_rollout_ref.model.path=deepseek-ai/deepseek-llm-7b-chat \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \\
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=2 \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=1
"""


def _derive(tmp_path: Path, verl: str):
    path = tmp_path / "run_deepseek_math_gsm8k_megatron.sh"
    path.write_text(SCRIPT, encoding="utf-8")
    launch = parse_launch(path.read_text(encoding="utf-8"), str(path))
    return derive(launch, {"verl": verl, "megatron-core": "0.12.0"}, torch_version="2.10.0")


@pytest.mark.parametrize("verl", ["0.4.0", "0.4.1"])
def test_a_release_before_mbridge_hard_codes_batching_off(tmp_path, verl):
    eff = _derive(tmp_path, verl)
    assert eff.values["pipeline_model_parallel_size"].value == 2
    assert eff.values["batch_p2p_comm"].value is False
    assert "config_converter.py" in eff.values["batch_p2p_comm"].source
    assert eff.outside_rules == {}


def test_before_mbridge_there_is_no_switch_to_it(tmp_path):
    """0.4.x reads no `use_mbridge`: verl's own converter builds the config, as with False."""
    eff = _derive(tmp_path, "0.4.1")
    assert eff.values["use_mbridge"].value is False
    assert eff.values["use_mbridge"].source.startswith("verl 0.4.1: ")
