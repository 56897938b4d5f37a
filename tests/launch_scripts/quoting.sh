#!/bin/bash
# Quotes, escapes, comments and a here-document that only looks like a command.
cat > /dev/null <<'NOTES'
megatron sft --pipeline_model_parallel_size 99
NOTES
SYSTEM_PROMPT="You are \"helpful\"; don't # stop"
LABEL=$'tab\tseparated'
export NPROC_PER_NODE=2 NNODES=1   # one node
megatron sft \
    --model 'Qwen/Qwen2.5-0.5B' \
    --system "$SYSTEM_PROMPT" \
    --run_name "$LABEL" \
    --output_dir out\ dir \
    --pipeline_model_parallel_size 2 \
    --dataset "a b" c \
    --sequence_parallel  # trailing comment ends the command here
