"""Megatron-LM's hybrid layer pattern (`--hybrid-layer-pattern`, alias `--hybrid-override-pattern`)
read for what validate_args derives from it: num_layers (its layer count) and the virtual
pipeline size (its `|` segments // PP). Oracle: megatron-core 0.17.0
megatron/core/ssm/mamba_hybrid_layer_allocation.py (get_hybrid_total_layer_count,
get_hybrid_total_pipeline_segment_count) and megatron/training/arguments.py:634-710."""

from __future__ import annotations

import pytest

from auditor.config.coerce import overrides_from
from auditor.config.derive import derive
from auditor.config.hybrid import hybrid_layers, hybrid_segments
from auditor.config.launch import parse_launch

# The construct of alibaba/Pai-Megatron-Patch@a098ca5acb examples/qwen3_next/run_mcore_qwen3_lite.sh
# (lines 47-57, 136): an old-style `--hybrid-override-pattern` of 48 layers without `|`, with
# `--num-layers` and PP 4 stated; shortened here.
SCRIPT = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 "
          "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
          "--micro-batch-size 1 --bf16 --lr 1e-4 --train-iters 10 --is-hybrid-model "
          "--tensor-model-parallel-size 1 --pipeline-model-parallel-size {pp} "
          "--hybrid-override-pattern '{pattern}'\n")


def derived(pattern: str, pp: int = 4):
    launch = parse_launch(SCRIPT.format(pattern=pattern, pp=pp), "run.sh")
    return derive(launch, {"megatron-core": "0.17.0"}, overrides_from([]), "2.11.0")


@pytest.mark.parametrize(("pattern", "layers", "segments"), [
    ("M-M-M-*-", 8, 1), ("M-M-|M-M*-", 9, 2), ("M-M-|M-M*-/MM/MM", 9, 2), ("MGE*|-|M|M", 7, 4)])
def test_counts_as_megatron_core_does(pattern: str, layers: int, segments: int) -> None:
    assert hybrid_layers(pattern) == layers
    assert hybrid_segments(pattern) == segments


@pytest.mark.parametrize("pattern", [None, 4, "M-x-", "M|-;"])
def test_what_megatron_core_refuses_is_unknown(pattern: object) -> None:
    assert hybrid_layers(pattern) is None and hybrid_segments(pattern) is None


def test_a_pattern_without_bars_is_no_virtual_pipeline() -> None:
    config = derived("M-M-*-M-M-M-*-M-", pp=4)  # 16 layers (the pattern beats --num-layers 8)
    assert config.value("num_layers") == 16
    assert config.value("virtual_pipeline_model_parallel_size") is None
    assert config.value("overlap_p2p_comm") is False


def test_bars_beyond_pp_are_virtual_stages() -> None:
    config = derived("M-|M-|*-|M-|M-|M-|*-|M-", pp=4)  # 8 segments over PP 4: VPP 2
    assert config.value("num_layers") == 16
    assert config.value("virtual_pipeline_model_parallel_size") == 2
