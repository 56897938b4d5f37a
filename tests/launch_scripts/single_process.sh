# No NPROC_PER_NODE / NNODES: ms-swift runs one process; the assignment is not exported.
NPROC_PER_NODE=8
megatron sft --model Qwen/Qwen2.5-0.5B --pipeline_model_parallel_size 2
