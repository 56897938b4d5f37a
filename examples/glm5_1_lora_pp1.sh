#!/bin/bash
# GLM-5.1 (glm_moe_dsa: 78 layers, 256 experts, DSA attention) Megatron LoRA SFT with ms-swift on
# 16 nodes x 8 GPUs = 128 GPUs, PP=1 TP=4 EP=8 (DP=32 in the report), global batch 32.
# From ms-swift #9451, https://github.com/modelscope/ms-swift/issues/9451: its "How to Reproduce" command with the `\` continuations the
# published copy lost, the variables of its "Debug Environment Variables" section exported, and
# the row PP=1 of its "Configurations Tried" table. Reported result: OOM during LoRA adapter injection (single card ~95GB full).
# No --decoder_last_pipeline_num_layers: ms-swift refuses it unless PP > 1, and the report's
# uneven split (18 layers on the last stage) belongs to its PP=4 command.
#
# Versions of the report: ms-swift 4.3.0.dev0, megatron-core 0.17.0, mcore-bridge 1.4.1,
# transformer-engine 2.15.0, CUDA 13.1, PyTorch 2.10.0:
# torch==2.10.0
# megatron-core==0.17.0 ms-swift==4.3.0 mcore-bridge==1.4.1  (4.3.0: the release of the report's 4.3.0.dev0)
#
# Run on every node with NODE_RANK (here ARNOLD_ID) set; MASTER_ADDR/MASTER_PORT come from the
# cluster's environment, as in the report.

export NCCL_DEBUG=WARN
export TORCH_DISTRIBUTED_DEBUG=DETAIL
export NCCL_TIMEOUT=1800
export NCCL_ASYNC_ERROR_HANDLING=1

MODEL_PATH=${MODEL_PATH:-ZhipuAI/GLM-5.1}
DATASET_PATH=${DATASET_PATH:?set DATASET_PATH to the SFT dataset}
OUTPUT_DIR=${OUTPUT_DIR:-output/glm5_1_lora_pp1}

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
    --pipeline_model_parallel_size 1 \
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
