#!/bin/bash
# PP-BugBench case megatron-lm-1450: a GPT with pipeline size 2 and 2 virtual stages per rank (the
# interleaved schedule), in the shape of Megatron-LM's examples/gpt3 launch scripts, 2 GPUs.
# megatron-core==0.17.0 (Megatron-LM core_v0.17.0)
#
# As written, Megatron-LM's own defaults apply with a virtual pipeline: overlap_p2p_comm=True and
# batch_p2p_comm=False (the fixed side). Megatron-LM's CLI refuses the buggy config at PP=2
# (megatron/training/arguments.py:838 asserts pipeline size > 2 when overlap is off); megatron-core
# used as a library (e.g. verl) reaches it. benchmarks/ppbugs/cases/megatron-lm-1450/case.toml sets
# it with --set overlap_p2p_comm=false batch_p2p_comm=true variable_seq_lengths=true.

export CUDA_DEVICE_MAX_CONNECTIONS=1

DISTRIBUTED_ARGS=(
    --nproc_per_node 2
    --nnodes 1
    --node_rank 0
    --master_addr localhost
    --master_port 6000
)

GPT_MODEL_ARGS=(
    --num-layers 8
    --hidden-size 1024
    --num-attention-heads 16
    --seq-length 2048
    --max-position-embeddings 2048
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 8
    --train-iters 10
    --lr 1.0e-4
    --bf16
    --mock-data
    --tokenizer-type NullTokenizer
    --vocab-size 32000
)

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 1
    --pipeline-model-parallel-size 2
    --num-virtual-stages-per-pipeline-rank 2
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]}
