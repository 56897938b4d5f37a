"""Benchmark: `p2paudit scan` of real launch scripts whose pipeline size (or another setting) is
unknown, so that the scan judges several cases and reads the entry script once per case
(auditor/scan.py `_cases`, config/entry_assign.py). Before/after in the same run: "uncached"
clears the entry readers' caches before each read of the entry (what every case paid before they
were cached on the parse), "cached" is the scan as shipped. Prints medians of CPU and wall seconds
per script and the before/after ratio, with the load average; asserts nothing. Each measure is
one scan in a fresh interpreter (the scan alone is timed, not Python's start or the imports).

    python benchmarks/bench_entry_cases.py CORPUS [--only ID ...] [--repeat 3]

CORPUS: the directory benchmarks/real_scripts/fetch.py wrote (rows of its manifest.toml).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tomllib
from pathlib import Path

from common import load

ROOT = Path(__file__).resolve().parent.parent
# Rows of benchmarks/real_scripts/manifest.toml whose scans judge cases (PP unknown): Megatron-
# Bridge's generate/inference scripts, several commands each.
DEFAULT = ["bridge-gptoss-inference", "bridge-glm45v-inference", "bridge-exaone45-inference"]
# The child: one scan, its (wall, CPU) printed as JSON; argv[2] "uncached" empties the caches of
# the entry readers before each read of the entry.
CHILD = """
import contextlib, io, json, sys, time
from auditor import cli
from auditor.config import entry_assign, entry_library, entry_script, launch
if sys.argv[2] == "uncached":
    caches = [entry_script.parsed, *(getattr(entry_library, n) for n in (
              "_writes_unnamed", "_loader_param", "_key_params", "_name_calls", "_used_only_by_calls")),
              *(getattr(entry_assign, n) for n in ("_scopes_of", "_own_nodes_of", "_unnamed_of", "_writes_of",
                                                   "_parents", "_helpers", "_fresh", "_loads_first"))]
    read = launch.read_entry_assignments
    def uncached(config):
        for c in caches:
            c.cache_clear()
        read(config)
    launch.read_entry_assignments = uncached
wall, cpu = time.perf_counter(), time.process_time()
with contextlib.redirect_stdout(io.StringIO()):
    cli.main(["scan", "--config", sys.argv[1], "--format", "json"])
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]), file=sys.stderr)
"""


def scan(script: Path, cwd: Path, mode: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "10000"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(script), mode], env=env, cwd=cwd,
                          check=False, capture_output=True, text=True)
    wall, cpu = json.loads(done.stderr.strip().splitlines()[-1])
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--only", action="append", default=[], metavar="ID")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with (ROOT / "benchmarks" / "real_scripts" / "manifest.toml").open("rb") as f:
        rows = {s["id"]: s for s in tomllib.load(f)["script"]}
    print(f"load {load()}; median of {args.repeat}, CPU (wall) seconds per scan")
    ratios = []
    for row in args.only or DEFAULT:
        s = rows[row]
        tree = args.corpus / f"{s['repo'].replace('/', '+')}@{s['commit'][:10]}"
        got: dict[str, list[tuple[float, float]]] = {"uncached": [], "cached": []}
        for _ in range(args.repeat):  # interleaved: a change of load hits both alike
            for mode, out in got.items():
                out.append(scan(tree / s["path"], tree / s.get("cwd", ""), mode))
        (bw, bc), (aw, ac) = ((statistics.median(m[0] for m in v), statistics.median(m[1] for m in v))
                              for v in got.values())
        ratios.append(bc / ac)
        print(f"{row:<40} uncached {bc:7.2f} ({bw:7.2f})  cached {ac:7.2f} ({aw:7.2f})  "
              f"before/after CPU {bc / ac:5.2f}x, wall {bw / aw:5.2f}x")
    print(f"median before/after CPU ratio {statistics.median(ratios):.2f}x; load {load()}")


if __name__ == "__main__":
    main()
