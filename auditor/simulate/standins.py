"""Stand-ins for modules a framework imports at module level but the schedule never calls, where
this CPU machine lacks them: megatron-core 0.19 imports triton (the CUDA torch wheels bring it,
the CPU ones do not) from its pipeline schedules, for MoE kernels a stand-in stage never runs.

Which modules, imported by which file, and why, is rules data (`[[import_stand_in]]` of the
framework's rules file). Only that file's import gets the stand-in: every other importer (torch's
own `has_triton` probes, megatron's `try: import triton` fallbacks) still finds the module
missing and takes its no-triton path: the stand-in is handed to that file's import statement
(builtins.__import__) and never enters sys.modules. It absorbs what a module body does at import
(decorators, annotations, attributes); `arm()`, before the schedule starts, restores the import
and makes any call into a stand-in raise, naming it, so a schedule that really needs the module
fails loudly instead of running on a stand-in.
"""

from __future__ import annotations

import builtins
import importlib.util
import types
from typing import Any

_ARMED = [False]


class StoodInError(RuntimeError):
    """A stood-in module was used after the imports: the simulation cannot run without it."""


class _Value:
    """Whatever a stood-in module's attributes, calls and subscripts give at import time."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> _Value:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Value(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _ARMED[0]:
            raise StoodInError(f"{self._name} was called, but p2paudit simulate stands it in "
                               f"(not installed here); install it to simulate this run")
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return _Value(f"{self._name}({getattr(args[0], '__name__', '?')})")  # a decorator
        return _Value(f"{self._name}(...)")

    def __getitem__(self, key: Any) -> _Value:
        return _Value(f"{self._name}[...]")


class _Module(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Value(f"{self.__name__}.{attr}")


_ORIGINAL_IMPORT = builtins.__import__
_IMPORTERS: dict[str, set[str]] = {}  # module -> paths (relative to the release) importing it


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
            level: int = 0) -> Any:
    """builtins.__import__, but a stood-in module for the files the rules name. Nothing enters
    sys.modules, so no other importer ever sees the stand-in."""
    top = name.split(".")[0]
    files = _IMPORTERS.get(top) if level == 0 else None
    if files:
        where = str((globals or {}).get("__file__") or "").replace("\\", "/")
        if any(where.endswith("/" + f) for f in files):
            module = _Module(top)
            return module if not fromlist else _Value(name)
    return _ORIGINAL_IMPORT(name, globals, locals, fromlist, level)


def install(entries: list[dict[str, str]]) -> list[str]:
    """Stand in for each entry's `module`, for its `imported_by` file only, where the module
    cannot be imported here; the modules stood in."""
    for e in entries:
        if importlib.util.find_spec(e["module"]) is None:
            _IMPORTERS.setdefault(e["module"], set()).add(e["imported_by"])
    if _IMPORTERS:
        builtins.__import__ = _import
    return sorted(_IMPORTERS)


def arm() -> None:
    """The imports are done (the schedule runs next): no later import gets a stand-in, and any
    call into one raises StoodInError."""
    _ARMED[0] = True
    builtins.__import__ = _ORIGINAL_IMPORT
    _IMPORTERS.clear()
