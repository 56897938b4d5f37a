#!/usr/bin/env bash
# python -m torch.distributed.run with elastic nodes and one process per visible GPU.
export CUDA_VISIBLE_DEVICES="0,1,2,3,4,5"
NODES_RANGE=2:4

python3 -u -m torch.distributed.run \
  --nproc-per-node=gpu --nnodes=$NODES_RANGE --rdzv-backend=c10d \
  --rdzv-endpoint="${MASTER_ADDR:-127.0.0.1}:29400" \
  pretrain_gpt.py \
  --pipeline-model-parallel-size=4 \
  --tensor-model-parallel-size=1 \
  --overlap-p2p-communication-warmup-flush \
  --micro-batch-size=1 --global-batch-size=64 \
  --use-ring-exchange-p2p
