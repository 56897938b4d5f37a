#!/bin/bash
# Shape of Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh: settings in bash arrays,
# positional paths, arithmetic, torchrun with the arrays expanded.

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
# Change for multinode config
MASTER_ADDR=localhost
MASTER_PORT=6000
NUM_NODES=2
NODE_RANK=0
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))

CHECKPOINT_PATH=$1 #<Specify path>
DATA_PATH=${2:-/data/gpt_text_document}

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
)

GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --seq-length 2048
    --attention-backend auto # Can use (flash/fused/unfused/local)
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1536
    --rampup-batch-size 16 16 5859375
    --lr 6.0e-5
    --fp16
)

MODEL_PARALLEL_ARGS=(
	--tensor-model-parallel-size 8
	--pipeline-model-parallel-size 2
	--no-overlap-p2p-communication
	--sequence-parallel
)
MODEL_PARALLEL_ARGS+=(--num-layers-per-virtual-pipeline-stage 4)

DATA_ARGS=(
    --data-path $DATA_PATH
    --split 949,50,1
    --save $CHECKPOINT_PATH
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    "${DATA_ARGS[@]}"
