"""Launch scripts that more than one test writes out: one copy, so a test that changes the
script changes it for every test that reads it."""

from __future__ import annotations

# After modelscope/ms-swift examples/megatron/moe/qwen3_moe.sh (commit 2d3694fb18, v4.3.0): its
# parallel settings and batch, on 2 nodes of 8, the releases of v4.3.0 pinned.
QWEN3_MOE = """#!/bin/bash
# megatron-core==0.17.0 ms-swift==4.3.0 mcore-bridge==1.4.1
PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' \\
NNODES=2 \\
NPROC_PER_NODE=8 \\
megatron sft \\
    --model Qwen/Qwen3-30B-A3B-Base \\
    --dataset 'liucong/Chinese-DeepSeek-R1-Distill-data-110k-SFT' \\
    --pipeline_model_parallel_size 2 \\
    --expert_model_parallel_size 8 \\
    --micro_batch_size 1 \\
    --global_batch_size 16 \\
    --packing true \\
    --max_length 8192 \\
    --sequence_parallel true
"""

# After modelscope/ms-swift examples/megatron/sft.sh (commit 3602360a56): `FLAG 2` is where a
# test writes `--pipeline_model_parallel_size` (or a misspelling of it), MORE its further words.
SWIFT_SFT = """export TORCH_DISTRIBUTED_DEBUG=DETAIL
NPROC_PER_NODE=2 \\
megatron sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --dataset AI-ModelScope/alpaca-gpt4-data-en \\
    FLAG 2 \\
    --train_iters 10 MORE
"""
