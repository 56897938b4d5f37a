"""Benchmark: `p2paudit sites` on the three real wheels, cold and warm, against `ast.parse`.

The baseline is `ast.parse` of the very same files, measured in the same run. "Cold" means an
empty analysis cache (the wheels are unpacked first, timed apart); "warm" a second run over
unchanged files. Prints medians and ratios; asserts nothing.

    python benchmarks/bench_sites.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics

from common import ast_baseline, fresh_cache, load, report, timed, wheels

from auditor import sources
from auditor.static.analyze import usable_cpus
from auditor.static.inventory import inventory


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    archives = wheels()
    baseline, files, lines = ast_baseline(args.repeat)
    print(f"{files} files, {lines} lines, {usable_cpus()} usable cores, load {load()}")
    cold, warm, unpack = [], [], []
    for _ in range(args.repeat):
        with fresh_cache():
            unpacked: list[sources.SourceSet] = []
            unpack.append(timed(lambda: unpacked.extend(sources.resolve(str(w)) for w in archives)))
            cold.append(timed(lambda: [inventory(s) for s in unpacked]))
            warm.append(timed(lambda: [inventory(s) for s in unpacked]))
    print(f"ast.parse baseline   {baseline[0]:7.3f} s  (median of {args.repeat}); CPU {baseline[1]:6.3f} s")
    report("sites, cold", cold, baseline, "<= 3x")
    report("sites, warm", warm, baseline, "<= 0.5x")
    print(f"unpacking 3 wheels   {statistics.median(u[0] for u in unpack):7.3f} s  "
          f"(once per wheel; not in the ratios); load {load()}")


if __name__ == "__main__":
    main()
