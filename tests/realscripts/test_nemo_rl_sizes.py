"""Issue 22, review h33-review1 (cp2_mtp.sh): a Megatron Policy's other sizes are NeMo-RL's
megatron_cfg, set on the provider's TransformerConfig (NVIDIA-NeMo/RL@7ea279abfbeb698b092856d0dab61e7cf39bc909
nemo_rl/models/megatron/setup.py:858-873 _apply_parallelism_config, :888-895 _apply_moe_config,
:1026-1033 _apply_mtp_config), not megatron-core's defaults. Config written after
examples/configs/recipes/llm/grpo-nemotron3-super-120BA12B-16n4g-megatron-qa-bf16-300step.yaml of
that commit (tensor_model_parallel_size 2, context_parallel_size 2, mtp_num_layers 2, PP 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli, rulebook

CONFIG = """policy:
  dtensor_cfg:
    enabled: false
  megatron_cfg:
    enabled: true
    pipeline_model_parallel_size: 1
    tensor_model_parallel_size: 2
    context_parallel_size: {cp}
    expert_model_parallel_size: 4
    mtp_num_layers: 2
cluster:
  gpus_per_node: 4
  num_nodes: 4
"""


def _scan(capsys, tmp_path: Path, cp: object) -> dict:
    (tmp_path / "examples" / "configs").mkdir(parents=True)
    (tmp_path / "examples" / "configs" / "c.yaml").write_text(CONFIG.format(cp=cp), encoding="utf-8")
    script = tmp_path / "launch.sh"
    script.write_text("#!/bin/bash\nuv run python examples/run_grpo.py --config examples/configs/c.yaml\n",
                      encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json"])
    return json.loads(capsys.readouterr().out)


def test_the_policys_sizes_are_its_megatron_cfg(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, 2)
    effective = doc["config"]["effective"]
    assert (effective["context_parallel_size"], effective["tensor_model_parallel_size"],
            effective["expert_model_parallel_size"]) == (2, 2, 4), doc["verdict"]["headline"]
    assert "megatron_cfg.context_parallel_size" in doc["config"]["provenance"]["context_parallel_size"]


def test_a_size_not_known_statically_is_unknown(capsys, tmp_path):
    """megatron-core's default (1) would rule MTP's context-parallel roll_tensor P2P out."""
    doc = _scan(capsys, tmp_path, "${oc.env:CP}")
    assert doc["config"]["effective"]["context_parallel_size"] == "unknown", doc["verdict"]["headline"]
    ruled_out = [s["id"] for s in doc["sites"] if "roll_tensor" in s["id"] and s["verdict"] == "unreachable"]
    assert not ruled_out


CHECKOUT = Path("/work/upstream/real_scripts/NVIDIA-NeMo+RL@7ea279abfb")


@pytest.mark.skipif(not (CHECKOUT / "nemo_rl/models/megatron/setup.py").is_file(), reason="the NeMo-RL checkout is not here")
def test_each_size_passed_is_set_from_megatron_cfg():
    rule = rulebook.load("nemo-rl").data["nemo_rl_policy"]
    setup = (CHECKOUT / "nemo_rl/models/megatron/setup.py").read_text(encoding="utf-8")
    assert rule["passed_code"] in setup
    for key in rule["passed"]:
        assert f"model_cfg.{key} = " in setup, key
