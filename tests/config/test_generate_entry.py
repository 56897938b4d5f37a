"""Which model a Megatron-Bridge generate run's provider is, as far as it decides a pipeline
layout (config/generate_entry.py, rules/megatron-bridge.toml bridge.entry.provider-layout).

After NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a
examples/models/glm/glm_45v/inference.sh:31-40 (`--hf_model_path
${WORKSPACE}/models/GLM-4.5V-hf-export`): a model directory named by its literal last part is
that model's; a model path not known at all may be Sarvam-MoE's or DeepSeek-V4's, whose
providers set a layout (sarvam_provider.py:137-150, model_provider.py:167-181).
"""

from __future__ import annotations

from pathlib import Path

from auditor.config.generate_entry import entry_defaults, entry_set
from auditor.config.launch import parse_launch

LAYOUT = "pipeline_model_parallel_layout"


def _launch(tmp_path: Path, model: str):
    script = tmp_path / "inference.sh"
    script.write_text("torchrun --nproc_per_node=4 examples/conversion/hf_to_megatron_generate_vlm.py "
                      f"--hf_model_path {model} --tp 1 --pp 2\n")
    return parse_launch(script.read_text(), str(script), environ={})


def test_a_named_model_directory_is_that_model_s(tmp_path: Path) -> None:
    launch = _launch(tmp_path, "${WORKSPACE}/models/GLM-4.5V-hf-export")
    assert "overlap_p2p_comm" in entry_defaults(launch)
    assert LAYOUT not in entry_set(launch)


def test_an_unknown_model_may_set_a_layout(tmp_path: Path) -> None:
    why, _ = entry_set(_launch(tmp_path, "${MODEL}"))[LAYOUT]
    assert "--hf_model_path ${MODEL}" in why
    assert LAYOUT in entry_set(_launch(tmp_path, "deepseek-ai/DeepSeek-V4-Flash"))
    assert LAYOUT not in entry_set(_launch(tmp_path, "Qwen/Qwen3-VL-8B-Instruct"))
