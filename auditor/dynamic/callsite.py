"""Names the line that called into torch.distributed, the way the static inventory names sites.

A site is (`path` relative to the package root, `line`..`end_line` of the call expression,
`function` = the code object's qualified name). The walk starts at the caller of a hook and skips
torch itself, this recorder, and the helpers torch wraps its API in, so `batch_isend_irecv`'s own
loop is never a site: its caller is. Results are cached per code object and per instruction, so a
hot call costs a few dictionary look-ups. The cache is keyed by `id(code)`, not by the code object:
hashing a code object hashes its bytecode and constants, the largest cost of a look-up; each entry
holds its code object, so the id cannot be reused while the entry exists.

An op's line also names the framework line that chose it (`chosen`): the first frame outside the
frameworks' comm wrappers (`comm_wrappers` of each rules file's `[framework]` table: DeepSpeed's
`deepspeed/comm/*`, megatron's p2p_communication.py, torch's c10d and its pipelining helpers).
The site stays the line that called torch (the static inventory's key); the chosen frame is the
line a user can act on: engine.py's `_exec_send_activations`, not deepspeed/comm/torch.py. One
walk finds both, stopping at the outermost of the two, each frame's part decided once per code
object.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from types import CodeType, FrameType

# Modules whose frames are never a site: torch, this package, and decorator plumbing
# (`typing_extensions.deprecated`, `warnings.deprecated`, `contextlib`) around torch's API.
RECORDER = "auditor.dynamic"  # this recorder's own package
SKIPPED = ("torch", RECORDER, "typing_extensions", "warnings", "contextlib")
# Code objects CPython (3.11) runs as their own frames although the source sees one function.
_INLINE = (".<locals>.<listcomp>", ".<locals>.<dictcomp>", ".<locals>.<setcomp>",
           ".<locals>.<genexpr>")
# Modules whose frames never chose an op: this package and decorator plumbing.
PLUMBING = SKIPPED[1:]


class _Code:
    """What a code object says about the sites in it."""

    __slots__ = ("code", "skipped", "passed", "path", "function", "sites", "chosen")

    def __init__(self, code: CodeType, skipped: bool, passed: bool, path: str,
                 function: str) -> None:
        self.code = code  # held: its id stays this entry's key
        self.skipped = skipped  # never a site: torch, this package, plumbing
        self.passed = passed  # never the chosen frame: a comm wrapper, this package, plumbing
        self.path = path
        self.function = function
        self.sites: dict[int, str] = {}  # instruction offset -> site JSON
        self.chosen: dict[int, str] = {}  # instruction offset -> `,"chosen":` + site JSON


_code: dict[int, _Code] = {}  # id(code) -> what it says

NO_SITE = "null"


def caller_site(skip: int = 2) -> str:
    """JSON of the first frame outside torch above `skip` frames (2: the hook's caller)."""
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None:
        info = _code.get(id(frame.f_code)) or _described(frame)
        if not info.skipped:
            return _cached_site(frame, info)
        frame = frame.f_back
    return NO_SITE


def caller_sites(skip: int = 2) -> tuple[str, str]:
    """(`caller_site(skip)`, `,"chosen":{...}` naming the first frame outside the comm wrappers,
    or "" where that is the site's own frame or no frame is outside them). The common case, a
    site outside every wrapper with no chosen frame below it, costs what `caller_site` does."""
    frame: FrameType | None = sys._getframe(skip)
    chosen = ""  # a chosen frame below the site (inside torch: pipelining's schedule)
    while frame is not None:
        info = _code.get(id(frame.f_code)) or _described(frame)
        if not info.skipped:
            site = _cached_site(frame, info)
            if chosen or not info.passed:
                return site, chosen
            return site, _chosen_above(frame.f_back)
        if not chosen and not info.passed:
            chosen = _chosen_json(frame, info)
        frame = frame.f_back
    return NO_SITE, chosen


def _chosen_above(frame: FrameType | None) -> str:
    """`,"chosen":{...}` of the first frame from `frame` outward outside the comm wrappers."""
    while frame is not None:
        info = _code.get(id(frame.f_code)) or _described(frame)
        if not info.passed:
            return _chosen_json(frame, info)
        frame = frame.f_back
    return ""


def _cached_site(frame: FrameType, info: _Code) -> str:
    """The site JSON of `frame`'s instruction, made once per code object and offset."""
    lasti = frame.f_lasti
    site = info.sites.get(lasti)
    if site is None:
        site = info.sites[lasti] = _site_json(frame, info)
    return site


def _chosen_json(frame: FrameType, info: _Code) -> str:
    lasti = frame.f_lasti
    chosen = info.chosen.get(lasti)
    if chosen is None:
        chosen = info.chosen[lasti] = ',"chosen":' + _site_json(frame, info)
    return chosen


def in_module(module: str, *packages: str) -> bool:
    """`module` is one of `packages` or inside one."""
    return any(module == m or module.startswith(m + ".") for m in packages)


def recorder_path(path: str) -> bool:
    """A site's `path` is a file of this recorder's own."""
    return path.startswith(RECORDER.replace(".", "/") + "/")


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
    skipped = in_module(module, *SKIPPED)
    code = frame.f_code
    function = getattr(code, "co_qualname", code.co_name)
    for suffix in _INLINE:
        if function.endswith(suffix):
            function = function[: -len(suffix)]
    if function in ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"):
        function = "<module>"
    plumbing = in_module(module, *PLUMBING)
    if module == "__main__":
        spec = glb.get("__spec__")
        module = getattr(spec, "name", None) or ""
    path = package_path(module, code.co_filename)
    passed = plumbing or is_comm_wrapper(path, function)
    info = _code[id(code)] = _Code(code, skipped, passed, path, function)
    return info


_wrappers: tuple[tuple[str, str | None], ...] | None = None  # (path pattern, function or None)


def is_comm_wrapper(path: str, function: str) -> bool:
    """A frame of a framework's comm wrappers: `path` (as sites name it) matches a rules file's
    `comm_wrappers` entry, `PATTERN` (fnmatch) or `PATTERN:QUALNAME` (that function only)."""
    global _wrappers
    if _wrappers is None:
        _wrappers = _load_wrappers()
    return any((fn is None or fn == function) and fnmatch.fnmatchcase(path, pattern)
               for pattern, fn in _wrappers)


def _load_wrappers() -> tuple[tuple[str, str | None], ...]:
    """Every framework's comm wrappers, read once per process from the rules. Where the rules
    cannot be read, none: every op's chosen frame is then its site, said by its absence."""
    try:
        from auditor.rulebook.frameworks import frameworks

        entries = [w for f in frameworks() for w in f.comm_wrappers]
    except Exception:
        return ()
    out = []
    for entry in entries:
        pattern, _, function = entry.partition(":")
        out.append((pattern, function or None))
    return tuple(out)


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
