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


def test_the_whole_world_is_not_split_by_the_language_module_s_sizes(tmp_path) -> None:
    """slurm_sft.sh's default layout: language TP=4 PP=2 DP=2 on ranks 0-15, images on rank 16:
    17 ranks, which TP*PP*CP = 8 does not divide. MIMO never runs megatron-core's
    initialize_model_parallel (its provider raises NotImplementedError,
    megatron_mimo_provider.py:656-671): each module's grid spans its own ranks, so the run starts."""
    from auditor.config.derive import derive

    config = _config(tmp_path, '--component "language=tp=4,pp=2,cp=1,dp=2,rank_offset=0" '
                               '--component "images=tp=1,pp=1,cp=1,dp=1,rank_offset=16"')
    assert config.entry_values["initializes_model_parallel"][0] is False
    read_entry(config)
    derived = derive(config, {"megatron-core": "0.17.0"}, {"world_size": "17"}, "2.10.0")
    assert not any(f.detail.get("rule") == "mcore.world-divisible" for f in derived.findings)


# --- a layout not given on the command line, and other spellings of the MIMO imports ------------
# After Megatron-Bridge@067f987df0 examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py:98-101
# G_DEFAULT_COMPONENTS = ["language=tp=1,dp=1,rank_offset=0", "images=tp=1,dp=1,rank_offset=1"],
# used as `components = args.component or G_DEFAULT_COMPONENTS` (:1255) where no --component is
# given (the entry's docstring, :24-25, runs it that way on 2 ranks).

DEFAULTED = ENTRY.replace('import argparse\n', 'import argparse\n\nG_DEFAULT_COMPONENTS = [\n'
                          '    "language=tp=1,dp=1,rank_offset=0",\n    "images=tp=1,dp=1,rank_offset=1",\n]\n') \
    .replace("args.component)", "args.component or G_DEFAULT_COMPONENTS)")


def _entry(tmp_path, entry: str, args: str = "", prefix: str = ""):
    folder = tmp_path / "examples" / "megatron_mimo" / "qwen35_vl"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "finetune_qwen35_vl.py").write_text(entry)
    script = tmp_path / "sft.sh"
    script.write_text(f"{prefix}torchrun --nproc_per_node=2 examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py {args}\n")
    return parse_launch(script.read_text(), str(script))


def _detail_fires(config) -> object:
    """torch.detail-unbatches on torch 2.10: True (fires), UNKNOWN (undecided) or False."""
    from auditor.config.derive import derive

    read_entry(config)
    derived = derive(config, {"megatron-core": "0.17.0"}, None, "2.10.0")
    if any(f.detail.get("rule") == "torch.detail-unbatches" for f in derived.findings):
        return True
    return UNKNOWN if any(u.startswith("torch.detail-unbatches") for u in derived.undecided) else False


def test_no_component_given_reads_the_entry_s_default_layout(tmp_path) -> None:
    config = _entry(tmp_path, DEFAULTED, prefix="export TORCH_DISTRIBUTED_DEBUG=DETAIL\n")
    values = _values(config)
    assert values["pipeline_model_parallel_size"] == 1 and values["tensor_model_parallel_size"] == 1
    assert values["pipeline_batches_between_modules"] is True  # language and images, disjoint ranks
    assert "default layout" in config.entry_values["pipeline_model_parallel_size"][1]
    assert _detail_fires(config) is True


def test_a_layout_not_read_leaves_the_exchange_between_modules_unknown(tmp_path) -> None:
    """No --component and a default not read, or a spec not known statically: whether two
    modules exchange is unknown, so DETAIL on 2.10 is undecided, not CLEAN."""
    config = _entry(tmp_path, ENTRY, prefix="export TORCH_DISTRIBUTED_DEBUG=DETAIL\n")
    assert _values(config)["pipeline_batches_between_modules"] is UNKNOWN
    assert _detail_fires(config) is UNKNOWN
    config = _entry(tmp_path, ENTRY, '--component "$LANG_SPEC" --component images=tp=1,dp=1,rank_offset=1',
                    prefix="export TORCH_DISTRIBUTED_DEBUG=DETAIL\n")
    assert _values(config)["pipeline_batches_between_modules"] is UNKNOWN
    assert _detail_fires(config) is UNKNOWN


def test_the_training_loop_imported_from_its_package_is_the_mimo_loop(tmp_path) -> None:
    """`from megatron.bridge.training import pretrain_megatron_mimo as _pm` names the module
    itself; `from megatron.bridge.models import megatron_mimo` likewise."""
    entry = (DEFAULTED.replace("from megatron.bridge.training.train_megatron_mimo import train_megatron_mimo",
                               "from megatron.bridge.training import pretrain_megatron_mimo as _pm")
             .replace("from megatron.bridge.models.megatron_mimo.megatron_mimo_provider import MegatronMIMOProvider",
                      "from megatron.bridge.models import megatron_mimo\n"
                      "MegatronMIMOProvider = megatron_mimo.MegatronMIMOProvider")
             .replace("train_megatron_mimo(provider)", "_pm.pretrain_megatron_mimo(provider)"))
    config = _entry(tmp_path, entry, prefix="export TORCH_DISTRIBUTED_DEBUG=DETAIL\n")
    assert _values(config)["pipeline_batches_between_modules"] is True
    assert _detail_fires(config) is True


def test_a_helper_module_running_the_mimo_loop_is_read(tmp_path) -> None:
    """The entry hands the provider to a local module that imports the MIMO loop."""
    entry = DEFAULTED.replace("from megatron.bridge.training.train_megatron_mimo import train_megatron_mimo",
                              "from mimo_loop import train_megatron_mimo")
    (tmp_path / "examples" / "megatron_mimo" / "qwen35_vl").mkdir(parents=True)
    (tmp_path / "examples" / "megatron_mimo" / "qwen35_vl" / "mimo_loop.py").write_text(
        "from megatron.bridge.training.train_megatron_mimo import train_megatron_mimo\n")
    config = _entry(tmp_path, entry)
    assert _values(config)["pipeline_batches_between_modules"] is True


def test_an_entry_setting_up_the_global_parallel_state_keeps_its_checks(tmp_path) -> None:
    """A MIMO entry whose own code calls megatron-core's initialize_model_parallel (as the
    Bridge's examples/megatron_mimo/llava/verify_clip_conversion.py:63 does, outside MIMO) splits
    the whole world by that call's own sizes, not the language module's: by 1 it divides any
    world; by others (or a call that is not megatron-core's function) it is not decided here."""
    def value(call: str) -> object:
        entry = DEFAULTED.replace('    dist.init_process_group("nccl")\n',
                                  '    dist.init_process_group("nccl")\n'
                                  '    from megatron.core import parallel_state as ps\n'
                                  f'    {call}\n')
        return _entry(tmp_path, entry).entry_values["initializes_model_parallel"][0]

    assert value("ps.initialize_model_parallel(tensor_model_parallel_size=1, order='tp-cp-ep-dp-pp')") is False
    assert value("ps.initialize_model_parallel(1, 1)") is False
    assert value("ps.initialize_model_parallel(tensor_model_parallel_size=4)") is UNKNOWN
    assert value("ps.initialize_model_parallel(tensor_model_parallel_size=args.tp)") is UNKNOWN
    assert value("ps.initialize_model_parallel(1, 1, 2)") is UNKNOWN  # virtual stages at PP 1 raise
    assert value("provider.initialize_model_parallel(seed=0)") is UNKNOWN  # a provider's own method


# --- the review's repro (r38-mimo): the review's run line, 17 ranks, the language module at
# TP=4 PP=2 on ranks 0-15 and images on rank 16, under DETAIL ------------------------------------

def _repro(tmp_path, entry: str):
    folder = tmp_path / "examples" / "megatron_mimo" / "qwen35_vl"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "finetune_qwen35_vl.py").write_text(entry)
    script = tmp_path / "run.sh"
    script.write_text("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n"
                      "torchrun --nproc_per_node=17 examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py "
                      '--component "language=tp=4,pp=2,cp=1,dp=2,rank_offset=0" '
                      '--component "images=tp=1,pp=1,cp=1,dp=1,rank_offset=16"\n')
    return parse_launch(script.read_text(), str(script))


def _derived(config):
    from auditor.config.derive import derive

    read_entry(config)
    return derive(config, {"megatron-core": "0.17.0"}, {"world_size": "17"}, "2.10.0")


def _rules(derived) -> set:
    return {f.detail.get("rule") for f in derived.findings}


def test_the_loop_reached_through_an_attribute_chain_is_the_mimo_loop(tmp_path) -> None:
    """`import megatron.bridge.training` then
    `megatron.bridge.training.train_megatron_mimo.train_megatron_mimo(provider)`: the MIMO loop
    runs (a dotted call ending in its name), so the modules exchange and DETAIL hangs them."""
    entry = ENTRY.replace("from megatron.bridge.training.train_megatron_mimo import train_megatron_mimo",
                          "import megatron.bridge.training") \
        .replace("    train_megatron_mimo(provider)", "    megatron.bridge.training.train_megatron_mimo.train_megatron_mimo(provider)")
    config = _repro(tmp_path, entry)
    assert _values(config)["pipeline_batches_between_modules"] is True
    assert _values(config)["initializes_model_parallel"] is False
    derived = _derived(config)
    assert "torch.detail-unbatches" in _rules(derived) and "mcore.world-divisible" not in _rules(derived)


def test_a_loop_named_outside_an_import_leaves_the_module_bridges_unknown(tmp_path) -> None:
    """`from megatron.bridge import training` and the loop looked up by name: whether it runs is
    not read, so the exchange between modules is unknown (never "no bridge"), with its --set."""
    entry = ENTRY.replace("from megatron.bridge.training.train_megatron_mimo import train_megatron_mimo",
                          "from megatron.bridge import training") \
        .replace("    train_megatron_mimo(provider)",
                 '    loop = getattr(training.train_megatron_mimo, "train_megatron_mimo")\n    loop(provider)')
    config = _repro(tmp_path, entry)
    assert _values(config)["pipeline_batches_between_modules"] is UNKNOWN
    note = next(d for d in config.diagnostics if d.kind == "launch.mimo-component")
    assert note.fix == "--set pipeline_batches_between_modules=true"
    derived = _derived(config)
    assert any(u.startswith("torch.detail-unbatches") for u in derived.undecided) \
        or "torch.detail-unbatches" in _rules(derived)


def test_the_entry_s_own_global_init_splits_the_world_by_its_own_sizes(tmp_path) -> None:
    """`ps.initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1)`
    after init_process_group: 17 ranks split by 1x1 start; the language module's TP*PP = 8 is not
    that call's."""
    entry = ENTRY.replace('    dist.init_process_group("nccl")\n',
                          '    dist.init_process_group("nccl")\n'
                          '    from megatron.core import parallel_state as ps\n'
                          '    ps.initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1)\n')
    derived = _derived(_repro(tmp_path, entry))
    assert "mcore.world-divisible" not in _rules(derived)
    assert "torch.detail-unbatches" in _rules(derived)
