#!/usr/bin/env bash
# Where the network transport's send-before-receive threshold lies: run.sh measured 8 MiB
# completing and 24 MiB hanging; this bisects between them. From the repository root:
#
#     OUT=/some/dir bash reports/glm5.1-pp-hang/gpu/threshold.sh
source "$(dirname "$0")/common.sh"

repro fallback-net-12mib extra "?" fallback-1f1b --transport net --size 12MiB --timeout 15
repro fallback-net-16mib extra "?" fallback-1f1b --transport net --size 16MiB --timeout 15
repro fallback-net-20mib extra "?" fallback-1f1b --transport net --size 20MiB --timeout 15

finish
