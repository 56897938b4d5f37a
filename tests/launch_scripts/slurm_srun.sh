#!/bin/bash
#SBATCH --job-name=gpt-pp4
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
set -euo pipefail

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29500
export NCCL_ASYNC_ERROR_HANDLING=1   # deprecated spelling, kept on purpose
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1

MEGATRON_ARGS="--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 \
--num-layers 32 --micro-batch-size 2 --global-batch-size 256 --seq-length 4096"

srun --nodes=4 --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c "
  torchrun \
    --nnodes \$SLURM_NNODES \
    --nproc_per_node 8 \
    --rdzv_id \$SLURM_JOB_ID --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:$MASTER_PORT \
    pretrain_gpt.py $MEGATRON_ARGS --distributed-timeout-minutes 30
" 2>&1 | tee train.log
