#!/usr/bin/env bash
# GPU validation of `p2paudit record` (issue 4), one command, from the repository root:
#
#     OUT=/some/dir bash reports/record-gpu/run.sh
#
# Needs 2 GPUs, torch with NCCL, and in .whl/ the wheels megatron_core-0.17.0-cp312-*.whl and
# ms_swift-4.3.0-py3-none-any.whl (installed here with --no-deps; megatron-core needs only torch,
# numpy and packaging besides). A tiny megatron-core GPT trains with PP=2 through
# get_forward_backward_func() (1F1B), variable_seq_lengths on, recorded in three variants
# (stock; ms-swift's _batched_p2p_ops patch; batch_p2p_comm=False), then the stock variant runs
# unrecorded before and after, for the step-time overhead. Writes into $OUT: trace-<variant>/,
# metrics/<run>/rank-N.json, log-<run>.txt, summary.md, summary.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the directory for the results}"
mkdir -p "$OUT"

# NVLink multicast stays off on the shared machines (see the machine notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"

{
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
  "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())),
  "gpus", torch.cuda.device_count(), torch.cuda.get_device_name(0))'
  python3 -c 'import megatron.core as m; print("megatron-core", m.__version__)'
  git rev-parse --short HEAD 2>/dev/null | sed 's/^/p2paudit commit /'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

TRAIN=(python3 -m torch.distributed.run --standalone --nproc_per_node 2 reports/record-gpu/train_gpt.py)
LONG=(--warmup 5 --steps 25)
SHORT=(--warmup 2 --steps 4)

# Five runs of well under a minute each; a run that hangs is stopped after 140 s (SIGTERM, which
# `p2paudit record` passes on: every rank then writes its hang file) so the rest still runs.
run() {  # run NAME COMMAND...: log to $OUT/log-NAME.txt, keep going on failure
  local name=$1; shift
  echo "== $name: $*" | tee "$OUT/log-$name.txt"
  timeout -k 20 140 "$@" >> "$OUT/log-$name.txt" 2>&1
  local status=$?
  echo "== $name: exit $status" | tee -a "$OUT/log-$name.txt"
  [ "$status" -eq 0 ] || echo "$name exit $status" >> "$OUT/failures.txt"
}

record() {  # record VARIANT RUN-NAME STEP-ARGS...
  local variant=$1 name=$2; shift 2
  run "$name" python3 -m auditor record --out "$OUT/trace-$variant" --hang-after 60 -- \
    "${TRAIN[@]}" --variant "$variant" --metrics "$OUT/metrics/$name" "$@"
}

run stock-plain "${TRAIN[@]}" --variant stock --metrics "$OUT/metrics/stock-plain" "${LONG[@]}"
record stock stock-recorded "${LONG[@]}"
cp "$OUT/log-stock-recorded.txt" "$OUT/log-stock.txt"
record swift swift "${SHORT[@]}"
record unbatched unbatched "${SHORT[@]}"
run stock-plain-again "${TRAIN[@]}" --variant stock --metrics "$OUT/metrics/stock-plain-again" \
  "${LONG[@]}"

python3 reports/record-gpu/summarize.py "$OUT" > /dev/null
cat "$OUT/summary.md"
[ ! -s "$OUT/failures.txt" ] || { echo "failed runs:"; cat "$OUT/failures.txt"; exit 1; }
