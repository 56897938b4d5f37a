#!/bin/bash

# A DeepSpeed pipeline-parallel run: 2 stages on one node of 2 GPUs, the model a PipelineModule
# trained with engine.train_batch(), as DeepSpeedExamples' training/pipeline_parallelism/train.py
# does (`deepspeed train.py --deepspeed_config=ds_config.json -p 2 --steps=200`).
# deepspeed==0.16.0
# torch==2.13.0

deepspeed --num_gpus 2 train.py \
    --deepspeed_config ds_config.json \
    --pipeline-parallel-size 2 \
    --steps 200
