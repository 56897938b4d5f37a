"""Benchmark: `p2paudit scan` of the shipped GLM-5.1 script, cold and warm, against `ast.parse`
of the three wheels' files measured in the same run. Prints medians and ratios; asserts nothing.

"Cold": an empty cache (wheels unpacked before, timed apart); "warm": the same scan again, in
the same process (the analysis cache already in memory); "warm, new process": the same scan in a
fresh interpreter, as `p2paudit scan` runs it, which reads the cache from disk (the scan alone is
timed there, not Python's start or the imports).
The load average is printed before and after: on a shared machine the wall ratio moves with it
(the CPU ratio, which counts worker processes too, much less).

    python benchmarks/bench_scan.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from common import ast_baseline, fresh_cache, load, report, timed, wheels

from auditor import sources
from auditor.scan import ScanInputs, run_scan
from auditor.static.analyze import usable_cpus

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"
# The child's (wall, CPU) of one scan, printed as JSON.
CHILD = """
import json, sys, time
from auditor.scan import ScanInputs, run_scan
inputs = ScanInputs(sys.argv[1], targets=sys.argv[2:], torch_version="2.10.0")
wall, cpu = time.perf_counter(), time.process_time()
run_scan(inputs)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""


def scan_in_new_process(targets: list[str]) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(SEED), *targets], env=env, check=True,
                          capture_output=True, text=True)
    wall, cpu = json.loads(done.stdout.splitlines()[-1])
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    archives = wheels()
    baseline, files, lines = ast_baseline(args.repeat)
    print(f"{files} files, {lines} lines, {usable_cpus()} usable cores, load {load()}; "
          f"{SEED.name}, torch 2.10.0")
    inputs = ScanInputs(str(SEED), targets=[str(w) for w in archives], torch_version="2.10.0")
    cold, warm, warm_new = [], [], []
    for _ in range(args.repeat):
        with fresh_cache():
            for w in archives:
                sources.resolve(str(w))
            cold.append(timed(lambda: run_scan(inputs)))
            warm.append(timed(lambda: run_scan(inputs)))
            warm_new.append(scan_in_new_process([str(w) for w in archives]))
    doc = run_scan(inputs)
    a = doc["analysis"]
    print(f"ast.parse baseline   {baseline[0]:7.3f} s  (median of {args.repeat}); CPU {baseline[1]:6.3f} s")
    report("scan, cold", cold, baseline, "<= 3x")
    report("scan, warm", warm, baseline, "<= 0.5x")
    report("warm, new process", warm_new, baseline, "<= 0.5x")
    print(f"(one scan: {a['functions_interpreted']} function contexts, "
          f"{a['modules_parsed'] + a['modules_cached']} modules of the call graph; "
          f"cold runs {', '.join(f'{c[0]:.2f}' for c in cold)} s; load {load()})")


if __name__ == "__main__":
    main()
