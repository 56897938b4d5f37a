#!/bin/bash
# The recommended GLM-5.1 LoRA configuration for 16 nodes x 8 GPUs (reports/glm5.1-pp-hang/README.md,
# "Recommended configuration"): the seed script examples/glm5_1_lora_pp4.sh with only what the
# audit found changed:
#   - TORCH_DISTRIBUTED_DEBUG=DETAIL removed: on torch 2.10 it makes every batch_isend_irecv of the
#     pipeline run op by op (the hang). INFO is safe; DETAIL is safe only on torch >= 2.11.
#   - NCCL_TIMEOUT removed (nobody reads it); NCCL_ASYNC_ERROR_HANDLING removed (deprecated alias;
#     torch's default, 3 = SkipCleanUp, already tears the process down on a NCCL error or timeout).
#   - --ddp_timeout 1800: a stuck collective or P2P op now ends the job after 30 min instead of
#     ms-swift's default of 18,000,000 s (208 days).
#   - TORCH_NCCL_USE_COMM_NONBLOCKING=1, TORCH_NCCL_NONBLOCKING_TIMEOUT=600: a communicator creation
#     that never completes fails after 10 min instead of waiting forever (not verified on GPUs yet:
#     see the README's "Verified on GPUs" table).
# Parallelism unchanged: PP=4 (20/20/20/18 layers), TP=4, EP=8, DP=8; the only one of the report's
# four layouts that both partitions 78 layers and fits 80 GB (README, "PP=1/2/4/8").
#
# torch==2.11.0
# megatron-core==0.17.0 ms-swift==4.3.0 mcore-bridge==1.4.1

export NCCL_DEBUG=WARN
export TORCH_NCCL_USE_COMM_NONBLOCKING=1
export TORCH_NCCL_NONBLOCKING_TIMEOUT=600

MODEL_PATH=${MODEL_PATH:-ZhipuAI/GLM-5.1}
DATASET_PATH=${DATASET_PATH:?set DATASET_PATH to the SFT dataset}
OUTPUT_DIR=${OUTPUT_DIR:-output/glm5_1_lora_pp4_recommended}

NPROC_PER_NODE=${NPROC_PER_NODE:-8} \
NNODES=${NNODES:-16} \
NODE_RANK=${ARNOLD_ID:-0} \
CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \
megatron sft \
    --model "${MODEL_PATH}" \
    --dataset "${DATASET_PATH}" \
    --tuner_type lora \
    --lora_rank 8 \
    --lora_alpha 32 \
    --target_modules all-linear \
    --merge_lora false \
    --tensor_model_parallel_size 4 \
    --expert_model_parallel_size 8 \
    --pipeline_model_parallel_size 4 \
    --decoder_last_pipeline_num_layers 18 \
    --ddp_timeout 1800 \
    --moe_grouped_gemm true \
    --moe_shared_expert_overlap true \
    --moe_aux_loss_coeff 0.01 \
    --dsa_indexer_loss_coeff 0.01 \
    --sequence_parallel true \
    --micro_batch_size 1 \
    --global_batch_size 32 \
    --packing true \
    --recompute_granularity full \
    --recompute_method uniform \
    --recompute_num_layers 1 \
    --finetune true \
    --cross_entropy_loss_fusion true \
    --optimizer_cpu_offload false \
    --optimizer_offload_fraction 1 \
    --lr 1e-4 \
    --lr_warmup_fraction 0.05 \
    --min_lr 1e-5 \
    --train_iters 100 \
    --max_length 8192 \
    --save_steps 100 \
    --logging_steps 1 \
    --output_dir "${OUTPUT_DIR}" \
    --dataloader_num_workers 4 \
    --dataset_num_proc 8 \
    --no_save_optim true \
    --no_save_rng true \
    --attention_backend flash \
    --agent_template glm5_1
