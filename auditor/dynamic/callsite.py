"""Names the line that called into torch.distributed, the way the static inventory names sites.

A site is (`path` relative to the package root, `line`..`end_line` of the call expression,
`function` = the code object's qualified name). The walk starts at the caller of a hook and skips
torch itself, this recorder, and the helpers torch wraps its API in, so `batch_isend_irecv`'s own
loop is never a site: its caller is. Results are cached per code object and per instruction, so a
hot call costs a few dictionary look-ups. The cache is keyed by `id(code)`, not by the code object:
hashing a code object hashes its bytecode and constants, the largest cost of a look-up; each entry
holds its code object, so the id cannot be reused while the entry exists.
"""

from __future__ import annotations

import json
import os
import sys
from types import CodeType, FrameType

# Modules whose frames are never a site: torch, this package, and decorator plumbing
# (`typing_extensions.deprecated`, `warnings.deprecated`, `contextlib`) around torch's API.
SKIPPED = ("torch", "auditor.dynamic", "typing_extensions", "warnings", "contextlib")
# Code objects CPython (3.11) runs as their own frames although the source sees one function.
_INLINE = (".<locals>.<listcomp>", ".<locals>.<dictcomp>", ".<locals>.<setcomp>",
           ".<locals>.<genexpr>")



class _Code:
    """What a code object says about the sites in it."""

    __slots__ = ("code", "skipped", "path", "function", "sites")

    def __init__(self, code: CodeType, skipped: bool, path: str, function: str) -> None:
        self.code = code  # held: its id stays this entry's key
        self.skipped = skipped
        self.path = path
        self.function = function
        self.sites: dict[int, str] = {}  # instruction offset -> site JSON


_code: dict[int, _Code] = {}  # id(code) -> what it says

NO_SITE = "null"


def caller_site(skip: int = 2) -> str:
    """JSON of the first frame outside torch above `skip` frames (2: the hook's caller)."""
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None:
        info = _code.get(id(frame.f_code))
        if info is None:
            info = _described(frame)
        if not info.skipped:
            lasti = frame.f_lasti
            site = info.sites.get(lasti)
            if site is None:
                site = info.sites[lasti] = _site_json(frame, info)
            return site
        frame = frame.f_back
    return NO_SITE


def frame_site(frame: FrameType) -> dict[str, object]:
    """The same identity for any frame (thread stacks in hang files), as a dict."""
    info = _code.get(id(frame.f_code)) or _described(frame)
    line, end_line = _span(frame)
    return {"path": info.path, "line": line, "end_line": end_line, "function": info.function}


def _site_json(frame: FrameType, info: _Code) -> str:
    line, end_line = _span(frame)
    return json.dumps({"path": info.path, "line": line, "end_line": end_line,
                       "function": info.function}, separators=(",", ":"))


def _span(frame: FrameType) -> tuple[int, int]:
    """Lines of the instruction being run: the whole call expression on 3.11+."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is not None and frame.f_lasti >= 0:
        for i, pos in enumerate(positions()):
            if i == frame.f_lasti // 2:
                if pos[0] is not None:
                    return pos[0], pos[1] if pos[1] is not None else pos[0]
                break
    line = frame.f_lineno or 0
    return line, line


def _described(frame: FrameType) -> _Code:
    """The frame's code described, and cached."""
    glb = frame.f_globals
    module = glb.get("__name__") or ""
    skipped = any(module == m or module.startswith(m + ".") for m in SKIPPED)
    code = frame.f_code
    function = getattr(code, "co_qualname", code.co_name)
    for suffix in _INLINE:
        if function.endswith(suffix):
            function = function[: -len(suffix)]
    if function in ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"):
        function = "<module>"
    if module == "__main__":
        spec = glb.get("__spec__")
        module = getattr(spec, "name", None) or ""
    info = _code[id(code)] = _Code(code, skipped, package_path(module, code.co_filename), function)
    return info


def package_path(module: str, filename: str) -> str:
    """`megatron/core/x.py` for module `megatron.core.x` at `/site/megatron/core/x.py`: the file
    relative to the sys.path entry it was imported from. A script run directly is its basename;
    code not from a file keeps its filename (`<string>`)."""
    parts = filename.replace(os.sep, "/").split("/")
    if not module or len(parts) < 2:
        return parts[-1]
    names = module.split(".")
    if parts[-1] == "__init__.py":
        names.append("__init__")
    tail = parts[-len(names):]
    stems = [p[:-3] if i == len(tail) - 1 and p.endswith(".py") else p for i, p in enumerate(tail)]
    if stems != names:
        return parts[-1] if filename.endswith(".py") else filename
    return "/".join(tail)
