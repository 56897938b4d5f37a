#!/usr/bin/env bash
# The README's resolution rows that gpu/run.sh does not cover, on 2 GPUs, in one command from the
# repository root (same helpers, same outputs: env.txt, verdicts.txt, doctor.txt, runs.tar.gz):
#
#     OUT=/some/dir bash reports/glm5.1-pp-hang/resolutions.sh
#     bash reports/glm5.1-pp-hang/resolutions.sh --cpu    # no GPU: the wait-for model's predictions
#
# 1. The seed run's own message size: 8192 packed tokens / TP 4 (sequence parallel) x 6144 x bf16
#    = 24 MiB per activation (memory.py), between the 16 MiB and 32 MiB that run.sh measures.
# 2. What ends a hang instead of curing it: the process-group timeout (ms-swift's --ddp_timeout)
#    for stuck SENDs, and TORCH_NCCL_USE_COMM_NONBLOCKING=1 for a communicator creation nobody
#    joins. Nobody has measured these; they are marked "?" and their verdict lines say what ended
#    the run. About 4 minutes.
source "$(dirname "$0")/gpu/common.sh"

# 1. 24 MiB over the network transport: op by op (torch 2.10 + DETAIL) and the two cures.
repro fallback-net-24mib core hang fallback-1f1b --transport net --size 24MiB --timeout 15
repro fallback-net-24mib-detail-off core ok fallback-1f1b --transport net --size 24MiB --fix detail-off
repro fallback-net-24mib-coalesced core ok fallback-1f1b --transport net --size 24MiB --fix coalesced

# 2a. --ddp_timeout's effect: a 20 s process-group timeout under the 60 s outer limit.
repro fallback-net-24mib-pg-timeout core "?" fallback-1f1b --transport net --size 24MiB \
  --pg-timeout 20 --timeout 60

# 2b. Non-blocking communicator creation bounded at 20 s, the store left at ms-swift's default.
export TORCH_NCCL_USE_COMM_NONBLOCKING=1 TORCH_NCCL_NONBLOCKING_TIMEOUT=20
repro lazy-init-nonblocking core "?" lazy-init --timeout 60
unset TORCH_NCCL_USE_COMM_NONBLOCKING TORCH_NCCL_NONBLOCKING_TIMEOUT

finish
