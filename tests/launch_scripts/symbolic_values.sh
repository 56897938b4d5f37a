#!/bin/bash
# Values nobody can know before the job runs.
HOST=$(hostname)
STAMP=`date +%s`
RUN_NAME="run-${HOST}-${STAMP}"
EXTRA="--log-interval 10"
PP=${PP_SIZE:-4}

torchrun --nproc_per_node "${GPUS:-8}" --nnodes "${NNODES}" --node_rank "$NODE_RANK" \
    pretrain_gpt.py \
    --pipeline-model-parallel-size $PP \
    --tensor-model-parallel-size ${TP_SIZE} \
    --save /ckpt/$RUN_NAME \
    $EXTRA \
    $EXTRA_ARGS \
    "$@"
