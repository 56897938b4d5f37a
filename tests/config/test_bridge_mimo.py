"""A Megatron-Bridge MIMO entry's per-module parallelism, `--component NAME=tp=N,pp=N,...`: the
language module's sizes are the run's pipeline sizes, with what the MIMO path fixes.

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a) examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py:
it imports MegatronMIMOProvider from megatron.bridge.models.megatron_mimo (:69), parses
`--component` (action="append", :1139) with G_COMPONENT_KEY_TO_FIELD (:90) and
_parse_component_spec (:196); examples/megatron_mimo/qwen35_vl/slurm_sft.sh:232-233 passes
`--component "language=tp=${MIMO_LANGUAGE_TP},pp=${MIMO_LANGUAGE_PP},..."` and an `images=` one.
"""

from __future__ import annotations

from auditor.config.bridge_mimo import read_mimo_components
from auditor.config.launch import parse_launch
from auditor.config.pyenv import read_entry

ENTRY = '''"""MegatronMIMO SFT (finetune_qwen35_vl.py's shape)."""
import argparse

import torch.distributed as dist
from megatron.bridge.models.megatron_mimo.megatron_mimo_provider import MegatronMIMOProvider
from megatron.bridge.training.train_megatron_mimo import train_megatron_mimo


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hf-model", type=str, default="Qwen/Qwen3.5-0.8B")
    parser.add_argument("--component", action="append", default=None)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    train_megatron_mimo(MegatronMIMOProvider, args.component)


if __name__ == "__main__":
    main()
'''


def _config(tmp_path, components: str, prefix: str = ""):
    folder = tmp_path / "examples" / "megatron_mimo" / "qwen35_vl"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "finetune_qwen35_vl.py").write_text(ENTRY)
    script = tmp_path / "sft.sh"
    script.write_text(f"{prefix}torchrun --nproc_per_node=17 examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py "
                      f"--hf-model Qwen/Qwen3.5-27B {components}\n")
    return parse_launch(script.read_text(), str(script))


def test_the_language_component_gives_the_pipeline_sizes(tmp_path) -> None:
    config = _config(tmp_path, '--component "language=tp=4,pp=2,cp=1,dp=2,rank_offset=0" '
                               '--component "images=tp=1,pp=1,cp=1,dp=1,rank_offset=16"')
    values = {k: v[0] for k, v in config.entry_values.items()}
    assert values["pipeline_model_parallel_size"] == 2
    assert values["tensor_model_parallel_size"] == 4
    assert values["context_parallel_size"] == 1
    assert values["expert_tensor_parallel_size"] == 1  # not given: ModuleParallelismConfig's 1
    assert "language=tp=4,pp=2" in config.entry_values["pipeline_model_parallel_size"][1]
    # the MIMO path: no virtual stages, megatron-core's P2P defaults, variable sequence lengths
    assert values["virtual_pipeline_model_parallel_size"] is None
    assert values["overlap_p2p_comm"] is False and values["batch_p2p_comm"] is True
    assert values["variable_seq_lengths"] is True
    # argparse appends each --component: no "given twice, the last wins" warning
    assert not any(d.kind == "launch.repeated-flag" for d in config.diagnostics)


def test_the_language_component_is_read_in_any_order(tmp_path) -> None:
    config = _config(tmp_path, "--component images=tp=1,dp=1,rank_offset=0 --component language=pp=4,dp=1,rank_offset=1")
    assert config.entry_values["pipeline_model_parallel_size"][0] == 4
    assert config.entry_values["tensor_model_parallel_size"][0] == 1


def test_a_spec_not_known_statically_stays_unknown_naming_the_set(tmp_path) -> None:
    config = _config(tmp_path, '--component "language=tp=4,pp=${PP},dp=1" --component images=tp=1,dp=1,rank_offset=4')
    assert "pipeline_model_parallel_size" not in config.entry_values
    # what the MIMO path fixes holds whatever the specs
    assert config.entry_values["overlap_p2p_comm"][0] is False
    assert config.entry_values["virtual_pipeline_model_parallel_size"][0] is None
    note = next(d for d in config.diagnostics if d.kind == "launch.mimo-component")
    assert note.fix == "--set pipeline_model_parallel_size=N"


def test_a_spec_the_entry_rejects_is_not_read(tmp_path) -> None:
    config = _config(tmp_path, "--component language=tp=4,vpp=2,dp=1")
    assert "pipeline_model_parallel_size" not in config.entry_values
    assert any(d.kind == "launch.mimo-component" for d in config.diagnostics)


def test_an_entry_that_is_not_mimo_is_left_alone(tmp_path) -> None:
    config = _config(tmp_path, "--component language=tp=4,pp=2,dp=1")
    assert config.entry_values["pipeline_model_parallel_size"][0] == 2
    (tmp_path / "examples" / "megatron_mimo" / "qwen35_vl" / "finetune_qwen35_vl.py").write_text(
        ENTRY.replace("megatron.bridge.models.megatron_mimo.megatron_mimo_provider", "mylib.providers"))
    script = tmp_path / "sft.sh"
    config = parse_launch(script.read_text(), str(script))
    read_mimo_components(config)
    assert "pipeline_model_parallel_size" not in config.entry_values
    assert not any(d.kind == "launch.mimo-component" for d in config.diagnostics)


def test_the_entry_s_own_init_backend_is_the_run_s(tmp_path) -> None:
    """finetune_qwen35_vl.py:1259 `dist.init_process_group("nccl")`: the backend is stated."""
    config = _config(tmp_path, "--component language=tp=4,pp=2,dp=1")
    read_entry(config)  # as scan.py does
    value, why, _ = config.entry_values["distributed_backend"]
    assert value == "nccl" and "init_process_group('nccl')" in why


def test_no_component_given_leaves_the_sizes_to_the_entry_s_default_layout(tmp_path) -> None:
    config = _config(tmp_path, "")
    assert "pipeline_model_parallel_size" not in config.entry_values
    assert config.entry_values["batch_p2p_comm"][0] is True
    note = next(d for d in config.diagnostics if d.kind == "launch.mimo-component")
    assert "none is given" in note.message and note.fix == "--set pipeline_model_parallel_size=N"
