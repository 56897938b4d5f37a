"""Benchmark: `p2paudit simulate` of the shipped GLM-5.1 script (PP=4 x 4 micro-batches, 24 MiB
activations), torch's own ScheduleInterleaved1F1B at PP=4 x 8 micro-batches (llama3-8B width)
as recorded gloo ranks, and `p2paudit simulate` of a torchtitan 0.3.0 launch of that schedule
(torchtitan's run_train.sh, llama3_8b, the settings on the command line), on this machine, against the cost of importing megatron-core 0.17.0 once
in a fresh interpreter (the fixed cost the forking rank program pays once for all ranks), measured in the
same run. Prints medians of the schedule run (the forked, recorded gloo ranks), the whole
command, and the ratio to the import; asserts nothing. Target: <= 60 s for each.

    python benchmarks/bench_simulate.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from auditor import sources

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "examples" / "glm5_1_lora_pp4.sh"


def import_seconds() -> float:
    root = sources.resolve("megatron-core==0.17.0").root
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONWARNINGS": "ignore"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import megatron.core.pipeline_parallel"], env=env,
                   check=True, capture_output=True)
    return time.perf_counter() - start


def simulate_seconds() -> tuple[float, float]:
    """(the whole command, the schedule run it reports) in seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sim.json"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config", str(SCRIPT),
                        "--torch", "2.10.0", "--format", "json", "-o", str(out)], env=env,
                       capture_output=True)
        total = time.perf_counter() - start
        return total, json.loads(out.read_text())["simulation"]["seconds"]


def pipelining_seconds() -> float:
    """torch's ScheduleInterleaved1F1B at PP=4 (2 stages a rank) x 8 micro-batches, recorded
    gloo ranks (auditor/simulate/pipelining_rank.py) at llama3-8B's width: (1, 2048, 4096) bf16."""
    from auditor.dynamic import record

    with tempfile.TemporaryDirectory() as tmp:
        own = Path(tmp) / "own"
        own.mkdir()
        env = record.environment(Path(tmp) / "trace", 60.0, None, base={})
        spec = {"pipeline_size": 4, "schedule": "Interleaved1F1B", "stages_per_rank": 2,
                "microbatches": 8, "shape": [1, 2048, 4096], "dtype": "bfloat16",
                "store": f"file://{own / 'store'}", "out": str(own),
                "record_env": {k: v for k, v in env.items() if k.startswith("P2PAUDIT_")}}
        (Path(tmp) / "spec.json").write_text(json.dumps(spec))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "auditor.simulate.pipelining_rank",
                        str(Path(tmp) / "spec.json")], env={**os.environ, "PYTHONPATH": str(ROOT)},
                       capture_output=True, check=True)
        return time.perf_counter() - start


# torchtitan's run_train.sh (pytorch/torchtitan main b5bcd76c) with the README's PP settings on
# the command line: PP=4 Interleaved1F1B, 8 micro-batches of (1, 2048, 4096) bf16.
TITAN = """\
torchrun --nproc_per_node=4 --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
  -m torchtitan.train --module llama3 --config llama3_8b \\
  --parallelism.pipeline_parallel_degree 4 --parallelism.pipeline_parallel_schedule Interleaved1F1B \\
  --parallelism.pipeline_parallel_microbatch_size 1 --parallelism.pipeline_parallel_schedule_csv '' \\
  --parallelism.pipeline_parallel_layers_per_stage None --training.local_batch_size 8 \\
  --training.seq_len 2048 --training.mixed_precision_param bfloat16
"""


def titan_seconds() -> float:
    """The whole `p2paudit simulate` command for the torchtitan launch above."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "run_train.sh"
        script.write_text(TITAN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config", str(script),
                        "--target", "torchtitan==0.3.0", "--target", "torch", "--torch", "2.13.0",
                        "--format", "json", "-o", str(Path(tmp) / "s.json")],
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, check=True)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    imports, totals, runs, pipelining, titan = [], [], [], [], []
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):  # alternating, so load on a shared machine hits both alike
        imports.append(import_seconds())
        total, run = simulate_seconds()
        totals.append(total)
        runs.append(run)
        pipelining.append(pipelining_seconds())
        titan.append(titan_seconds())
        loads.append(os.getloadavg()[0])
    base = statistics.median(imports)
    for name, values in (("import megatron-core", imports), ("schedule run (4 ranks)", runs),
                         ("simulate command", totals),
                         ("torch Interleaved1F1B PP=4 x 8", pipelining),
                         ("simulate torchtitan PP=4 x 8", titan)):
        median = statistics.median(values)
        print(f"{name:<30} {median:7.1f} s  {median / base:5.2f}x import  "
              f"(rounds: {', '.join(f'{v:.1f}' for v in values)})")
    # A median under load says little by itself: the 1-minute load at the start and after
    # each round, on this machine's cores.
    print(f"cores: {os.cpu_count()}, load average: {', '.join(f'{x:.1f}' for x in loads)}; "
          f"target: the command <= 60 s")


if __name__ == "__main__":
    main()
