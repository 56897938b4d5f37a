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
from auditor.config.expr import UNKNOWN
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
    provider = MegatronMIMOProvider.from_standard_provider(None, args.component)
    train_megatron_mimo(provider)


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


# --- the pipeline between modules, and a layout the entry's own code builds ---------------------
# After Megatron-Bridge@067f987df0 examples/megatron_mimo/llava/megatron_mimo_training_llava_audio.py:
# _build_parallelism_config (:272-291) lays out "language", "images" and "audios" with
# ModuleParallelismConfig(tensor_model_parallel_size=int(os.environ.get("MIMO_LLM_TP", 4)), ...),
# main() passes MegatronMIMOProvider(..., topology={"images": ["language"], "audios": ["language"],
# "language": []}) (:734-739) and runs pretrain_megatron_mimo (:826); run_hetero_llava_audio.sh
# exports MIMO_LLM_PP=${MIMO_LLM_PP:-1} and the rest (:27-41) before `uv run torchrun
# --nproc_per_node 8 ...` (:190). The modules sit on disjoint ranks, and megatron-core's
# BridgeCommunicator batches isend+irecv between them whatever batch_p2p_comm.

LLAVA = '''"""MegatronMIMO LLaVA training (megatron_mimo_training_llava_audio.py's shape)."""
import argparse
import os

import torch.distributed as dist
from megatron.bridge.models.megatron_mimo.megatron_mimo_config import (
    MegatronMIMOParallelismConfig,
    ModuleParallelismConfig,
)
from megatron.bridge.models.megatron_mimo.megatron_mimo_provider import MegatronMIMOProvider
from megatron.bridge.training.pretrain_megatron_mimo import pretrain_megatron_mimo


def _build_parallelism_config():
    return MegatronMIMOParallelismConfig(
        module_parallelisms={
            "language": ModuleParallelismConfig(
                tensor_model_parallel_size=int(os.environ.get("MIMO_LLM_TP", 4)),
                pipeline_model_parallel_size=int(os.environ.get("MIMO_LLM_PP", 1)),
                data_parallel_size=int(os.environ.get("MIMO_LLM_DP", 1)),
                rank_offset=int(os.environ.get("MIMO_LLM_OFFSET", 0)),
            ),
            "images": ModuleParallelismConfig(
                tensor_model_parallel_size=int(os.environ.get("MIMO_VISION_TP", 2)),
                data_parallel_size=1,
                rank_offset=int(os.environ.get("MIMO_VISION_OFFSET", 4)),
            ),
        }
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--micro-batch-size", type=int, default=1)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    provider = MegatronMIMOProvider(
        megatron_mimo_parallelism_config=_build_parallelism_config(),
        TOPOLOGY
    )
    pretrain_megatron_mimo(cfg=provider, forward_step_func=None, build_data_iterators_fn=None)


if __name__ == "__main__":
    main()
'''
EDGES = 'topology={"images": ["language"], "language": []},'


def _llava(tmp_path, exports: str = "", topology: str = EDGES, entry: str = LLAVA):
    folder = tmp_path / "examples" / "megatron_mimo" / "llava"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train_llava.py").write_text(entry.replace("TOPOLOGY", topology))
    script = tmp_path / "run.sh"
    script.write_text(f"set -euo pipefail\n{exports}"
                      "uv run torchrun --nproc_per_node 8 --nnodes 1 examples/megatron_mimo/llava/train_llava.py "
                      "--micro-batch-size 4\n")
    return parse_launch(script.read_text(), str(script))


def _values(config) -> dict:
    return {k: v[0] for k, v in config.entry_values.items()}


def test_a_layout_the_entry_builds_from_the_environment_is_read(tmp_path) -> None:
    config = _llava(tmp_path, 'MIMO_LLM_PP=${MIMO_LLM_PP:-2}\nexport MIMO_LLM_PP\n')
    values = _values(config)
    assert values["pipeline_model_parallel_size"] == 2  # the launch's export
    assert values["tensor_model_parallel_size"] == 4  # unset: os.environ.get's default
    assert values["context_parallel_size"] == 1  # not given: ModuleParallelismConfig's default
    assert values["virtual_pipeline_model_parallel_size"] is None
    assert values["batch_p2p_comm"] is True and values["overlap_p2p_comm"] is False
    assert "ModuleParallelismConfig" in config.entry_values["pipeline_model_parallel_size"][1]


def test_modules_on_disjoint_ranks_batch_between_them_even_at_a_language_pp_of_1(tmp_path) -> None:
    values = _values(_llava(tmp_path))
    assert values["pipeline_model_parallel_size"] == 1
    assert values["pipeline_batches_between_modules"] is True


def test_the_provider_s_default_topology_joins_each_module_to_the_language_one(tmp_path) -> None:
    """finetune_qwen35_vl.py:373 builds MegatronMIMOProvider.from_standard_provider(...): no
    topology, so each modality module feeds the language one (megatron_mimo_provider.py:269-274)."""
    config = _config(tmp_path, '--component "language=tp=4,pp=1,dp=2,rank_offset=0" '
                               '--component "images=tp=1,pp=1,dp=1,rank_offset=8"')
    assert _values(config)["pipeline_batches_between_modules"] is True
    assert _values(_llava(tmp_path, topology=""))["pipeline_batches_between_modules"] is True


def test_a_topology_joining_no_two_modules_batches_nothing_between_them(tmp_path) -> None:
    values = _values(_llava(tmp_path, topology='topology={"images": [], "language": []},'))
    assert values["pipeline_batches_between_modules"] is False


def test_a_topology_not_known_statically_leaves_it_unknown(tmp_path) -> None:
    values = _values(_llava(tmp_path, topology="topology=load_graph(),"))
    assert values["pipeline_batches_between_modules"] is UNKNOWN


def test_an_environment_value_not_known_statically_leaves_the_size_unknown(tmp_path) -> None:
    config = _llava(tmp_path, 'export MIMO_LLM_PP="$(cat pp.txt)"\n')
    assert _values(config)["pipeline_model_parallel_size"] is UNKNOWN
    # the modules still exchange between them
    assert _values(config)["pipeline_batches_between_modules"] is True


def test_an_entry_naming_a_p2p_setting_leaves_megatron_core_s_defaults_unread(tmp_path) -> None:
    entry = LLAVA.replace("    dist.init_process_group(\"nccl\")\n",
                          "    dist.init_process_group(\"nccl\")\n    provider_overlap = dict(batch_p2p_comm=False)\n")
    values = _values(_llava(tmp_path, entry=entry))
    assert values["batch_p2p_comm"] is UNKNOWN and values["overlap_p2p_comm"] is UNKNOWN


def test_an_entry_that_runs_no_mimo_training_loop_is_left_alone(tmp_path) -> None:
    """examples/conversion/convert_megatron_mimo.py takes `--component` too (qwen35_vl/conversion.sh:
    89-95), and runs no MIMO training loop: none of the training path's values are its."""
    folder = tmp_path / "examples" / "megatron_mimo" / "qwen35_vl"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "finetune_qwen35_vl.py").write_text(
        ENTRY.replace("from megatron.bridge.training.train_megatron_mimo import train_megatron_mimo\n", "")
        .replace("    train_megatron_mimo(provider)\n", ""))
    script = tmp_path / "convert.sh"
    script.write_text("torchrun --nproc_per_node=2 examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py "
                      '--component "language=tp=1,pp=2,dp=1,rank_offset=0"\n')
    config = parse_launch(script.read_text(), str(script))
    assert not {"pipeline_model_parallel_size", "variable_seq_lengths", "batch_p2p_comm",
                "pipeline_batches_between_modules"} & set(config.entry_values)


def test_detail_on_torch_2_10_hangs_the_exchange_between_modules(tmp_path) -> None:
    """The llava run under TORCH_DISTRIBUTED_DEBUG=DETAIL: every module has PP 1, yet the
    encoder and the language module both put their isend first in a batch torch 2.10 runs op by
    op; torch 2.11 coalesces it."""
    from auditor.config.derive import derive

    def fired(torch: str) -> bool:
        config = _llava(tmp_path, "export TORCH_DISTRIBUTED_DEBUG=DETAIL\n")
        read_entry(config)  # as scan.py does: the entry's init_process_group("nccl")
        derived = derive(config, {"megatron-core": "0.17.0"}, None, torch)
        return any(f.detail.get("rule") == "torch.detail-unbatches" for f in derived.findings)

    assert fired("2.10.0")
    assert not fired("2.11.0")
