# Environment given to one command only, and a variable that never reaches it.
TORCH_DISTRIBUTED_DEBUG=DETAIL
NCCL_DEBUG=INFO
export OMP_NUM_THREADS=4
cd "${MEGATRON_DIR:-.}" && NCCL_DEBUG=WARN TORCH_NCCL_BLOCKING_WAIT=1 env NCCL_P2P_DISABLE=1 \
    torchrun --standalone --nproc_per_node=4 pretrain_gpt.py --pipeline-model-parallel-size 4 \
    --num-layers 8 --num-layers 16
