"""Issue 22, review h33-review1 (gen_pp2.sh): a GRPO policy trained by Megatron at one stage whose
generation runs on Megatron's own inference model at two stages. NeMo-RL builds that model with
policy.generation.mcore_generation_config merged over policy.megatron_cfg
(NVIDIA-NeMo/RL@7ea279abfbeb698b092856d0dab61e7cf39bc909
nemo_rl/models/generation/megatron/config.py:74-96 merged_inference_megatron_cfg, :99-130 its
layout keys, pipeline_model_parallel_size among them); its pipeline P2P is megatron-core's
inference, which no rules file models: not CLEAN. Config written after
examples/configs/recipes/llm/grpo-nanov3-30BA3B-4n4g-megatron_colocated_reshard.yaml of that
commit (generation.backend: megatron, mcore_generation_config with its own layout).
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
  generation:
    backend: {backend}
    mcore_generation_config:
      tensor_model_parallel_size: 4
cluster:
  gpus_per_node: 4
  num_nodes: 4
"""
SCRIPT = """#!/bin/bash
uv run python examples/run_grpo.py --config examples/configs/c.yaml {overrides}
"""


def _scan(capsys, tmp_path: Path, backend: str, overrides: str) -> dict:
    (tmp_path / "examples" / "configs").mkdir(parents=True)
    (tmp_path / "examples" / "configs" / "c.yaml").write_text(CONFIG.format(backend=backend), encoding="utf-8")
    script = tmp_path / "launch.sh"
    script.write_text(SCRIPT.format(overrides=overrides), encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json"])
    return json.loads(capsys.readouterr().out)


GEN_PP = "policy.generation.mcore_generation_config.pipeline_model_parallel_size"


@pytest.mark.parametrize("backend, overrides, status", [
    ("megatron", f"{GEN_PP}=2", "not-covered"),
    ("megatron", "", "clean"),  # the inference model at megatron_cfg's one stage
    ("vllm", f"{GEN_PP}=2", "clean"),  # mcore_generation_config unread by vLLM
    ("megatron", f"{GEN_PP}=${{GEN_PP}}", "inconclusive"),
])
def test_megatron_generation_on_two_stages_is_not_covered(capsys, tmp_path, backend, overrides, status):
    doc = _scan(capsys, tmp_path, backend, overrides)
    assert doc["verdict"]["status"] == status, doc["verdict"]["headline"]
    if status == "not-covered":
        assert "inference" in doc["verdict"]["headline"]


CHECKOUT = Path("/work/upstream/real_scripts/NVIDIA-NeMo+RL@7ea279abfb")


@pytest.mark.skipif(not (CHECKOUT / "nemo_rl/models/generation/megatron/config.py").is_file(),
                    reason="the NeMo-RL checkout is not here")
def test_the_rule_quotes_the_merge_and_its_layout_keys():
    rule = rulebook.load("nemo-rl").data["nemo_rl_policy"]
    code = (CHECKOUT / "nemo_rl/models/generation/megatron/config.py").read_text(encoding="utf-8")
    assert rule["generation_code"] in code
    assert '"pipeline_model_parallel_size",' in code.split("layout_keys = (")[1].split(")")[0]
