"""What a verl launch changes in the model after its config.json (rules/verl.toml
[[model_override]], config/derive.py model_sizes): never the checkpoint's size in place of the one
the run builds (issue 22, review h34-review3: false DOES NOT START and false CLEAN).

Written after verl's own keys as its examples spell them (volcengine/verl@b178a3cd56
examples/grpo_trainer/run_qwen3-235b_megatron_96gb.sh: `+actor_rollout_ref.actor.megatron.
override_transformer_config.KEY=V`; `+actor_rollout_ref.model.override_config.model_config.
max_position_embeddings=...`) and the code that reads them: 0.6.1 config_converter.py:58/:91
(num_layers from hf_config, then override_transformer_config merged over it), megatron_workers.py:148
(override_config.model_config), 0.8.0 workers/config/model.py:146-147/:188-191 (hf_config_path, a
flat override_config), engine/megatron.yaml:14 (the actor's tensor_model_parallel_size).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

VERSIONS = {"verl": "0.6.1", "megatron-core": "0.13.0"}
SCRIPT = """set -x
python3 -m verl.trainer.main_ppo --config-path=./config --config-name='ppo_megatron_trainer' \\
    actor_rollout_ref.model.path={model} \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size={pp} \\
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size={pp} \\
    {extra} \\
    trainer.n_gpus_per_node=8 trainer.nnodes=2
"""
QWEN7 = "Qwen/Qwen2.5-7B"
MOONLIGHT = "moonshotai/Moonlight-16B-A3B"
OTC = "actor_rollout_ref.actor.megatron.override_transformer_config"


def _values(tmp_path: Path, extra: str, model: str = QWEN7, pp: int = 8) -> dict[str, object]:
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT.format(model=model, pp=pp, extra=extra))
    config = derive(parse_launch(path.read_text(), str(path)), VERSIONS, torch_version="2.10.0")
    return {k: v.value for k, v in config.values.items()}


def _checks(tmp_path: Path, extra: str, model: str = QWEN7, pp: int = 8) -> list[str]:
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT.format(model=model, pp=pp, extra=extra))
    config = derive(parse_launch(path.read_text(), str(path)), VERSIONS, torch_version="2.10.0")
    return [f.message for f in config.findings if f.severity == "error"]


def test_override_transformer_config_size_wins(tmp_path: Path) -> None:
    """num_layers given there is the model's (24 over 8 stages splits), not config.json's 28."""
    assert _values(tmp_path, f"+{OTC}.num_layers=24")["num_layers"] == 24
    assert not _checks(tmp_path, f"+{OTC}.num_layers=24")


def test_ref_size_otherwise_is_unknown(tmp_path: Path) -> None:
    """The ref's own override of a size the actor does not give leaves it unknown."""
    extra = "+actor_rollout_ref.ref.megatron.override_transformer_config.num_layers=24"
    assert _values(tmp_path, extra)["num_layers"] is UNKNOWN


def test_dict_form_is_read(tmp_path: Path) -> None:
    """`KEY={num_layers_in_last_pipeline_stage:13}` is Hydra's dict: read as the dotted keys."""
    extra = f"'{OTC}={{num_layers_in_last_pipeline_stage:13}}'"
    values = _values(tmp_path, extra, MOONLIGHT, 2)
    assert values["num_layers_in_last_pipeline_stage"] == 13
    assert not _checks(tmp_path, extra, MOONLIGHT, 2)


def test_unreadable_dict_leaves_settings_unknown(tmp_path: Path) -> None:
    """A dict not known statically may set any size or layout key: unknown, not the defaults."""
    values = _values(tmp_path, f"{OTC}=$OTC", MOONLIGHT, 2)
    assert values["num_layers"] is UNKNOWN
    assert values["num_layers_in_last_pipeline_stage"] is UNKNOWN


@pytest.mark.parametrize("extra", [
    "+actor_rollout_ref.model.override_config.model_config.num_hidden_layers=24",
    "+actor_rollout_ref.model.override_config.num_hidden_layers=24",
    "actor_rollout_ref.model.hf_config_path=/cfgs/tiny-24-layer",
])
def test_hf_config_change_leaves_sizes_unknown(tmp_path: Path, extra: str) -> None:
    """A changed Hugging Face config: the layer count is unknown, no DOES NOT START from 28."""
    assert _values(tmp_path, extra)["num_layers"] is UNKNOWN
    assert not _checks(tmp_path, extra)


def test_harmless_hf_override_keeps_sizes(tmp_path: Path) -> None:
    """max_position_embeddings changes no size: config.json's 28 layers still fail over 8."""
    extra = "+actor_rollout_ref.model.override_config.model_config.max_position_embeddings=32768"
    assert _values(tmp_path, extra)["num_layers"] == 28


def test_actor_tensor_size_is_read(tmp_path: Path) -> None:
    """verl's TP 8 meets Qwen2.5-7B's 28 heads: megatron-core refuses (not megatron-core's TP 1)."""
    extra = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8"
    assert _values(tmp_path, extra, pp=2)["tensor_model_parallel_size"] == 8
    assert any("num_attention_heads 28" in m for m in _checks(tmp_path, extra, pp=2))
