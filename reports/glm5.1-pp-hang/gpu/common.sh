# Shared by run.sh (2 GPUs) and run4.sh (4 GPUs); sourced, not run. See run.sh for what they do.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
MODE=gpu
[ "${1:-}" = --cpu ] && MODE=cpu
OUT=${OUT:-/tmp/p2paudit-glm51-$MODE}
mkdir -p "$OUT/runs"
: > "$OUT/verdicts.txt"
: > "$OUT/doctor.txt"
# NVLink multicast stays off on the shared machines (see the machine notes); nothing here uses it.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
BUDGET=${BUDGET:-360}  # seconds after which runs marked "extra" are skipped
START=$SECONDS
UNEXPECTED=0

{
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
  "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(),
  torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-",
  "nccl", ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-")'
  git rev-parse --short HEAD 2>/dev/null | sed 's/^/p2paudit commit /'
  nvidia-smi topo -m 2>/dev/null
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# repro NAME core|extra EXPECT ARGS...: one `p2paudit repro` run (--cpu: the model's prediction
# of the same NCCL run instead). EXPECT is hang, ok or "?" (a measurement nobody made yet).
repro() {
  local name=$1 kind=$2 expect=$3
  shift 3
  if [ "$kind" = extra ] && [ $((SECONDS - START)) -gt "$BUDGET" ]; then
    echo "$name SKIPPED (past the ${BUDGET} s budget): p2paudit repro $*" | tee -a "$OUT/verdicts.txt"
    return
  fi
  local cmd=(python3 -m auditor repro "$@" --keep "$OUT/runs/$name")
  [ "$MODE" = cpu ] && cmd=(python3 -m auditor repro "$@" --backend nccl --predict)
  local t0=$SECONDS
  # SIGINT: the launcher's cleanup kills the ranks (a repro cuts itself off long before this).
  timeout -s INT 170 "${cmd[@]}" > "$OUT/runs/$name.txt" 2>&1
  local rc=$? got=other
  [ $rc -eq 0 ] && got=ok
  [ $rc -eq 1 ] && got=hang
  local mark="as expected"
  if [ "$expect" = "?" ]; then mark="measured"; elif [ "$got" != "$expect" ]; then
    mark="UNEXPECTED (expected $expect)"; UNEXPECTED=$((UNEXPECTED + 1)); fi
  printf '%s: %s, %s, exit %s, %s s: p2paudit repro %s\n    %s\n' "$name" "$got" "$mark" "$rc" \
    $((SECONDS - t0)) "$*" "$(tr '\n' ' ' < "$OUT/runs/$name.txt" | cut -c1-4000)" \
    | tee -a "$OUT/verdicts.txt"
}

# doctor NAME [VAR=VALUE...] -- DOCTOR-ARGS...: `p2paudit doctor` with that environment.
doctor() {
  local name=$1
  shift
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  [ "$MODE" = cpu ] && set -- "$@" --backend gloo
  echo "== $name: ${vars[*]} p2paudit doctor $*" >> "$OUT/doctor.txt"
  timeout -s INT 120 env "${vars[@]}" python3 -m auditor doctor "$@" >> "$OUT/doctor.txt" 2>&1
  echo "== $name: exit $?" >> "$OUT/doctor.txt"
}

# recorded NAME TRANSPORT ARGS...: the same reproducer under `p2paudit record`, then the wait-for
# model on the real trace (init as recorded, coalescing as observed). --cpu: a gloo run instead.
recorded() {
  local name=$1 transport=$2
  shift 2
  if [ $((SECONDS - START)) -gt "$BUDGET" ]; then
    echo "$name SKIPPED (past the ${BUDGET} s budget)" | tee -a "$OUT/verdicts.txt"
    return
  fi
  if [ "$MODE" = cpu ]; then
    transport=gloo
    set -- fallback-1f1b --backend gloo --size 4 --variable-seq-lengths false --timeout 4
  fi
  timeout -s INT 170 python3 -m auditor record --out "$OUT/runs/$name-trace" --hang-after 8 -- \
    python3 -m auditor repro "$@" --keep "$OUT/runs/$name" > "$OUT/runs/$name.txt" 2>&1
  python3 - "$OUT/runs/$name-trace" "$transport" >> "$OUT/runs/$name.txt" 2>&1 <<'PY'
import sys
from auditor.analysis.waitfor.model import Conditions
from auditor.analysis.waitfor.programs import programs_from_events
from auditor.analysis.waitfor.replay import analyze
from auditor.dynamic.trace import read_trace_dir
trace = read_trace_dir(sys.argv[1])
programs, init = programs_from_events({r: rt.head for r, rt in trace.ranks.items()}), trace.init_mode()
print(f"wait-for model on the recorded trace ({sum(map(len, programs.values()))} ops, "
      f"init {init}, skipped: {trace.skipped}):")
print(analyze(programs, Conditions.for_transport(sys.argv[2], init or "lazy")).summary())
PY
  printf '%s: p2paudit record -- p2paudit repro %s\n    %s\n' "$name" "$*" \
    "$(tr '\n' ' ' < "$OUT/runs/$name.txt" | cut -c1-6000)" | tee -a "$OUT/verdicts.txt"
}

finish() {
  echo "$UNEXPECTED unexpected outcome(s); $((SECONDS - START)) s in all" | tee -a "$OUT/verdicts.txt"
  tar czf "$OUT/runs.tar.gz" -C "$OUT" runs && rm -rf "$OUT/runs"
  ls -la "$OUT"
}
