#!/usr/bin/env bash
# GPU validation of `p2paudit repro`, `p2paudit doctor` and the wait-for model (issue 6) on
# 2 GPUs, in one command from the repository root (no wheels needed: only the image's torch):
#
#     OUT=/some/dir bash reports/glm5.1-pp-hang/gpu/run.sh
#     bash reports/glm5.1-pp-hang/gpu/run.sh --cpu    # no GPU: each case as the model predicts it
#
# Every NCCL case and fix of docs/findings.md §1 and 4, back to back; expected hangs are cut after 15 s.
# Then two of the hangs recorded with `p2paudit record` and explained by the wait-for model from
# their real traces, and, while the time budget lasts, the transport buffer sizes nobody measured
# (net 8/16 MiB, NVLink 128 MiB/1 GiB). About 6 minutes. Writes 4 files into $OUT: env.txt,
# verdicts.txt (per run: outcome, expected or not, exit, seconds, the command, its verdict line),
# doctor.txt, runs.tar.gz (per run: spec, per-rank state, torchrun log, verdict.json; traces).
source "$(dirname "$0")/common.sh"

doctor doctor-lazy -- --nproc 2 --pp 2
doctor doctor-seed-env TORCH_DISTRIBUTED_DEBUG=DETAIL NCCL_TIMEOUT=1800 NCCL_ASYNC_ERROR_HANDLING=1 -- --nproc 2 --pp 2
doctor doctor-eager -- --nproc 2 --pp 2 --eager

# docs/findings.md §1: lazy communicator creation, one op per rank
repro lazy-init core hang lazy-init --timeout 15
repro lazy-init-store-timeout core hang lazy-init --pg-timeout 10 --timeout 30
repro lazy-init-coalesced core ok lazy-init --fix coalesced
repro lazy-init-unbatched core ok lazy-init --fix unbatched
repro lazy-init-eager core ok lazy-init --fix eager

# docs/findings.md §4: megatron-core 0.17's 1F1B step with each batch issued op by op (torch 2.10 + DETAIL)
repro fallback-nvlink-32mib core ok fallback-1f1b --transport nvlink --size 32MiB
repro fallback-net-32mib core hang fallback-1f1b --transport net --size 32MiB --timeout 15
repro fallback-net-32mib-coalesced core ok fallback-1f1b --transport net --size 32MiB --fix coalesced
repro fallback-net-32mib-detail-off core ok fallback-1f1b --transport net --size 32MiB --fix detail-off
repro fallback-net-32mib-evenodd core ok fallback-1f1b --transport net --size 32MiB --fix evenodd
repro fallback-net-32mib-eager core hang fallback-1f1b --transport net --size 32MiB --fix eager --timeout 15
repro fallback-net-16kib core ok fallback-1f1b --transport net --size 16KiB
repro fallback-net-4mib core ok fallback-1f1b --transport net --size 4MiB

# The real NCCL hangs recorded, and explained by the wait-for model from their traces.
recorded fallback-net-32mib-recorded net fallback-1f1b --transport net --size 32MiB --timeout 15
recorded lazy-init-recorded nvlink lazy-init --timeout 15

# Not measured before: where the thresholds lie (the model assumes 4 MiB net, 32 MiB NVLink).
repro fallback-net-8mib extra "?" fallback-1f1b --transport net --size 8MiB --timeout 15
repro fallback-net-16mib extra "?" fallback-1f1b --transport net --size 16MiB --timeout 15
repro fallback-nvlink-128mib extra "?" fallback-1f1b --transport nvlink --size 128MiB --timeout 15
repro fallback-nvlink-1gib extra "?" fallback-1f1b --transport nvlink --size 1GiB --timeout 15

finish
