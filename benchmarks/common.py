"""What the static benchmarks share: the real wheels, the `ast.parse` baseline measured in the
same run, and a fresh cache directory per cold run."""

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


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def wheels() -> list[Path]:
    """The downloaded wheels (fetched once into the real cache)."""
    for t in TARGETS:
        sources.resolve(t)
    return [next((sources.cache_dir() / "downloads" / t.replace("==", "-")).glob("*.whl"))
            for t in TARGETS]


def ast_baseline(repeat: int) -> tuple[float, int, int]:
    """Median seconds to `ast.parse` every file of the three wheels; files; lines."""
    files = [s.root / f for s in (sources.resolve(t) for t in TARGETS) for f in s.files]
    lines = sum(p.read_bytes().count(b"\n") for p in files)

    def parse_all() -> None:
        for p in files:
            ast.parse(p.read_bytes())

    return statistics.median(timed(parse_all) for _ in range(repeat)), len(files), lines


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


def report(name: str, seconds: float, baseline: float, target: str) -> None:
    print(f"{name:<20} {seconds:7.3f} s  {seconds / baseline:5.2f}x ast.parse  (target {target})")
