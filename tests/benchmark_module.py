"""A benchmark script (benchmarks/*.py) imported as a module, for tests of its judging rules:
the benchmarks are scripts, not a package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark(filename: str) -> ModuleType:
    """benchmarks/`filename`, executed once as module `bench_<stem>`."""
    name = "bench_" + Path(filename).stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / filename)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
