"""Benchmark: `p2paudit sites` on the three real wheels, cold and warm, against `ast.parse`.

The baseline is `ast.parse` of the very same files, measured in the same run. "Cold" means an
empty analysis cache (the wheels are downloaded and unpacked first; unpacking is timed apart);
"warm" means a second run over unchanged files. Prints medians and ratios; asserts nothing.

    python benchmarks/bench_sites.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import tempfile
import time

from auditor import sources
from auditor.static.sites import inventory

TARGETS = ["megatron-core==0.17.0", "ms-swift==4.3.0", "mcore-bridge==1.4.1"]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    downloaded = [sources.resolve(t) for t in TARGETS]  # fetched once into the real cache
    wheels = [
        next((sources.cache_dir() / "downloads" / t.replace("==", "-")).glob("*.whl"))
        for t in TARGETS
    ]
    files = [s.root / f for s in downloaded for f in s.files]
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    print(f"{len(files)} files, {lines} lines, {os.cpu_count()} cores")

    def parse_all() -> None:
        for p in files:
            ast.parse(p.read_bytes())

    baseline = statistics.median(timed(parse_all) for _ in range(args.repeat))
    cold_runs, warm_runs, unpack_runs = [], [], []
    saved = os.environ.get("P2PAUDIT_CACHE")
    try:
        for _ in range(args.repeat):
            tmp = tempfile.mkdtemp(prefix="p2paudit-bench-")
            os.environ["P2PAUDIT_CACHE"] = tmp
            unpacked: list[sources.SourceSet] = []
            unpack_runs.append(timed(lambda: unpacked.extend(sources.resolve(str(w)) for w in wheels)))
            cold_runs.append(timed(lambda: [inventory(s) for s in unpacked]))
            warm_runs.append(timed(lambda: [inventory(s) for s in unpacked]))
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if saved is None:
            os.environ.pop("P2PAUDIT_CACHE", None)
        else:
            os.environ["P2PAUDIT_CACHE"] = saved
    cold, warm, unpack = (statistics.median(r) for r in (cold_runs, warm_runs, unpack_runs))
    print(f"ast.parse baseline  {baseline:7.3f} s  (median of {args.repeat})")
    print(f"sites, cold         {cold:7.3f} s  {cold / baseline:5.2f}x ast.parse  (target <= 3x)")
    print(f"sites, warm         {warm:7.3f} s  {warm / baseline:5.2f}x ast.parse  (target <= 0.5x)")
    print(f"unpacking 3 wheels  {unpack:7.3f} s  (once per wheel; not in the ratios)")


if __name__ == "__main__":
    main()
