"""Minimal torchrun reproducers of P2P failure modes and of their fixes (`p2paudit repro`).

A case module has NAME, FIXES and `plan(spec) -> ReproPlan`: what every rank issues, how, and the
environment it runs in. `launch` runs a plan under torchrun with an outer time limit, `rank` is what
each torchrun process runs, `progress` is how ranks say where they are, `verdict` turns that into
the one line the user reads.
"""

from __future__ import annotations

import importlib
from types import ModuleType

CASES: dict[str, str] = {
    "lazy-init": "auditor.repro.lazy_init",
    "fallback-1f1b": "auditor.repro.fallback_1f1b",
}


def load_case(name: str) -> ModuleType:
    return importlib.import_module(CASES[name])
