#!/usr/bin/env bash
# The 3- and 4-rank cases, for a machine with 4 GPUs (nvidia-h200-x4), one command from the
# repository root; same outputs as run.sh:
#
#     OUT=/some/dir bash reports/glm5.1-pp-hang/gpu/run4.sh
#     bash reports/glm5.1-pp-hang/gpu/run4.sh --cpu
#
# lazy-init with 3 and 4 ranks (docs/findings.md §1's "every rank inside a different communicator's
# creation"; with --pg-timeout, which ranks the store timeout reaches: the model says all but
# rank 0, the group communicator's root in ncclCommInitRank), and the 4-stage 1F1B step.
source "$(dirname "$0")/common.sh"

doctor doctor-pp4 -- --nproc 4 --pp 4
doctor doctor-pp2-detail TORCH_DISTRIBUTED_DEBUG=DETAIL -- --nproc 4 --pp 2

repro lazy-init-3 core hang lazy-init --nproc 3 --timeout 15
repro lazy-init-4 core hang lazy-init --nproc 4 --timeout 15
repro lazy-init-4-store-timeout core hang lazy-init --nproc 4 --pg-timeout 10 --timeout 30
repro lazy-init-4-coalesced core ok lazy-init --nproc 4 --fix coalesced
repro lazy-init-4-unbatched core ok lazy-init --nproc 4 --fix unbatched
repro lazy-init-4-eager core ok lazy-init --nproc 4 --fix eager

repro fallback4-net-32mib core hang fallback-1f1b --nproc 4 --transport net --size 32MiB --timeout 15
repro fallback4-nvlink-32mib core ok fallback-1f1b --nproc 4 --transport nvlink --size 32MiB
repro fallback4-net-32mib-coalesced core ok fallback-1f1b --nproc 4 --transport net --size 32MiB --fix coalesced
repro fallback4-net-32mib-evenodd core ok fallback-1f1b --nproc 4 --transport net --size 32MiB --fix evenodd
repro fallback4-net-32mib-eager core hang fallback-1f1b --nproc 4 --transport net --size 32MiB --fix eager --timeout 15

recorded lazy-init-4-recorded nvlink lazy-init --nproc 4 --timeout 15
recorded fallback4-net-32mib-recorded net fallback-1f1b --nproc 4 --transport net --size 32MiB --timeout 15

finish
