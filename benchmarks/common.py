"""What the static benchmarks share: the real wheels, the `ast.parse` baseline measured in the
same run, and a fresh cache directory per cold run.

Every measure is a pair: wall seconds, and CPU seconds of this process and its reaped worker
processes. On a shared machine the wall ratio moves with the load; the CPU ratio much less."""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from auditor import sources

TARGETS = ["megatron-core==0.17.0", "ms-swift==4.3.0", "mcore-bridge==1.4.1"]


Measure = tuple[float, float]  # (wall seconds, CPU seconds)


def timed(fn: Callable[[], object]) -> Measure:
    cpu, wall = _cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - wall, _cpu() - cpu


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def median(measures: list[Measure]) -> Measure:
    return statistics.median(m[0] for m in measures), statistics.median(m[1] for m in measures)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def wheels() -> list[Path]:
    """The downloaded wheels (fetched once into the real cache)."""
    for t in TARGETS:
        sources.resolve(t)
    return [next((sources.cache_dir() / "downloads" / t.replace("==", "-")).glob("*.whl"))
            for t in TARGETS]


def ast_baseline(repeat: int) -> tuple[Measure, int, int]:
    """Median time to `ast.parse` every file of the three wheels; files; lines."""
    files = [s.root / f for s in (sources.resolve(t) for t in TARGETS) for f in s.files]
    lines = sum(p.read_bytes().count(b"\n") for p in files)

    def parse_all() -> None:
        for p in files:
            ast.parse(p.read_bytes())

    return median([timed(parse_all) for _ in range(repeat)]), len(files), lines


@contextlib.contextmanager
def fresh_cache() -> Iterator[Path]:
    """P2PAUDIT_CACHE pointed at an empty directory for the duration."""
    saved = os.environ.get("P2PAUDIT_CACHE")
    tmp = Path(tempfile.mkdtemp(prefix="p2paudit-bench-"))
    os.environ["P2PAUDIT_CACHE"] = str(tmp)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if saved is None:
            os.environ.pop("P2PAUDIT_CACHE", None)
        else:
            os.environ["P2PAUDIT_CACHE"] = saved


def report(name: str, measures: list[Measure], baseline: Measure, target: str) -> None:
    """Median wall and CPU time against the baseline's, with the target for the wall ratio."""
    wall, cpu = median(measures)
    print(f"{name:<20} {wall:7.3f} s  {wall / baseline[0]:5.2f}x ast.parse  (target {target}); "
          f"CPU {cpu:6.3f} s  {cpu / baseline[1]:5.2f}x")
