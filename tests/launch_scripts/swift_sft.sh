# ms-swift's own (non-Megatron) trainer, in the style of its README examples.
CUDA_VISIBLE_DEVICES=0,1,2,3 \
NPROC_PER_NODE=4 \
swift sft \
    --model Qwen/Qwen2.5-7B-Instruct \
    --train_type lora \
    --dataset 'AI-ModelScope/alpaca-gpt4-data-zh#500' \
              'AI-ModelScope/alpaca-gpt4-data-en#500' \
              "swift/self-cognition#500" \
    --torch_dtype bfloat16 \
    --num_train_epochs 1 \
    --learning_rate 1e-4 \
    --lora-rank 8 \
    --target_modules all-linear \
    --gradient_checkpointing \
    --system 'You are a helpful assistant.' \
    --model_author swift --model_name swift-robot
