#!/bin/bash

# torch.distributed.pipelining on one node, 2 ranks, gloo on CPU: examples/pipelining_train.py
# steps Schedule1F1B, ScheduleGPipe and ScheduleInterleaved1F1B in turn. The scan reads the
# script as torch.distributed.pipelining's (rules/pipelining.toml), its code the entry point:
#   p2paudit scan --config examples/pipelining_pp2.sh
# or one of its functions: --target examples/pipelining_train.py --target torch \
#       --entry pipelining_train:train_1f1b
# torch==2.13.0

torchrun --nproc_per_node 2 examples/pipelining_train.py
