#!/usr/bin/env bash
# `p2paudit record` on torchtitan 0.2.2 with NCCL (issue 27 item 3), one command, from the
# repository root:
#
#     TITAN=/path/to/torchtitan-v0.2.2-checkout OUT=/some/dir bash reports/titan_record/run.sh
#
# Needs 2 NVIDIA GPUs, torch with NCCL (2.13.0 is the release measured on CPU), torchtitan 0.2.2
# installed (`pip install torchtitan==0.2.2`) and TITAN a checkout of pytorch/torchtitan at tag
# v0.2.2 (its debug_model.toml and tests/assets: tokenizer, c4_test). No shim: on GPUs torchtitan
# picks cuda and NCCL itself. Records its llama3 debugmodel at PP=2, 2 steps, under each schedule
# it offers for 2 ranks: Interleaved1F1B (its default), 1F1B, ZBVZeroBubble and DualPipeV (its
# own dual_pipe_v.py overlap callback needs accelerator streams, line 263: the one of the four
# that cannot run on CPU). Writes into $OUT: trace-<schedule>/, log-<schedule>.txt,
# report-<schedule>.json and summary.txt (per rank: ops per API, the line that chose each kind,
# the verdict). Expected: each run completes; every P2P op's site is torchtitan/train.py's
# `pp_schedule.step` and its chosen line is torch's pipelining schedule or stage (docs/traces.md
# lists what the CPU run recorded); each report's verdict has no error.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the directory for the results}" "${TITAN:?set TITAN to a torchtitan v0.2.2 checkout}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
P2PAUDIT=$PWD
# NVLink multicast stays off on the shared machines (see the machine notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH="$P2PAUDIT${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import torch, torchtitan; print("torch", torch.__version__, "nccl",
  ".".join(map(str, torch.cuda.nccl.version())), "gpus", torch.cuda.device_count(),
  "torchtitan", torchtitan.__file__)' | tee "$OUT/env.txt"

for schedule in Interleaved1F1B 1F1B ZBVZeroBubble DualPipeV; do
  rm -rf "$OUT/trace-$schedule"
  (cd "$TITAN" && timeout 600 python3 -m auditor record --out "$OUT/trace-$schedule" -- \
    python3 -m torch.distributed.run --nproc_per_node=2 --rdzv_backend c10d \
      --rdzv_endpoint=localhost:0 -m torchtitan.train \
      --job.config_file ./torchtitan/models/llama3/train_configs/debug_model.toml \
      --training.steps 2 --parallelism.pipeline_parallel_degree 2 \
      --parallelism.data_parallel_shard_degree 1 \
      --parallelism.pipeline_parallel_schedule "$schedule") > "$OUT/log-$schedule.txt" 2>&1
  echo "$schedule: record exit $?" | tee -a "$OUT/summary.txt"
  python3 -m auditor report --trace "$OUT/trace-$schedule" --format json \
    -o "$OUT/report-$schedule.json" 2>&1 | tee -a "$OUT/summary.txt"
  python3 -c 'import sys; sys.path.insert(0, "benchmarks"); import bench_record_titan as b
from pathlib import Path; b.summary(Path(sys.argv[1]))' "$OUT/trace-$schedule" >> "$OUT/summary.txt" 2>&1
done
cat "$OUT/summary.txt"
