"""Rules confirmed against a source checkout the run reads (issue 22 item 6).

A rules file is verified on the releases its `[framework] verified` names; a release outside them
(Megatron-LM's front end at core_v0.15/0.16, whose megatron/training no wheel ships) is unknown.
A launch script inside a checkout of that release runs the checkout's own code, which is here to
read: an [[arg]], [[rule]] or [[check]] whose `code` is in its `source` file of the checkout (in
its `function` or `class` where the entry names one) applies to that release; one whose code is not
there stays unknown. The checkout must be the release judged: its version file says which.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from auditor.checkout_version import stated_release
from auditor.sources import version_file_release


def is_release(distribution: str, root: Path, version: str) -> bool:
    """Whether `root` is a checkout of exactly `version`, as its version file says (auditor.sources
    reads every framework's; Megatron-LM's is megatron-core's package_info.py; else the release
    its pyproject states, verl's `version = {file = "verl/version/version"}`)."""
    own = version_file_release(root, distribution)
    said = own[0] if own else stated_release(root, distribution, distribution.replace("-", "_"), development=True).version
    try:
        return said is not None and Version(said) == Version(version)
    except InvalidVersion:
        return False


def confirmed(raw: dict[str, Any], root: Path) -> bool:
    """Whether the entry's `code` is in its `source` file of `root`, within its `function` or
    `class` where it names one (whitespace aside: a line the checkout wraps differently)."""
    code, source = raw.get("code"), str(raw.get("source", ""))
    # `OWNER/NAME@COMMIT PATH:LINE`: read from a checkout between releases (verl's 0.8.0.dev):
    # a checkout holding the same code in PATH is confirmed the same way.
    source = source.split(" ", 1)[1] if "@" in source.split(" ")[0] and " " in source else source
    if not code or not source or "@" in source.split(" ")[0]:
        return False
    path = root / re.sub(r":\d+$", "", source)
    scope = raw.get("function") or raw.get("class")
    text = _segment(path, str(scope)) if scope else _text(path)
    return text is not None and _flat(code) in _flat(text)


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


@functools.lru_cache(maxsize=64)
def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


@functools.lru_cache(maxsize=64)
def _tree(path: Path) -> ast.Module | None:
    text = _text(path)
    try:
        return ast.parse(text) if text is not None else None
    except SyntaxError:
        return None


@functools.lru_cache(maxsize=512)
def _segment(path: Path, name: str) -> str | None:
    """The source of every function or class named `name` in `path`, joined; None if none.
    `Class.method` names the method of that class (verl's `ActorRolloutRefWorker.__init__`)."""
    text, tree = _text(path), _tree(path)
    if text is None or tree is None:
        return None
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    owner, _, member = name.rpartition(".")
    scopes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == owner] if owner else [tree]
    parts = [ast.get_source_segment(text, n) or "" for scope in scopes for n in ast.walk(scope)
             if isinstance(n, kinds) and n.name == member]
    return "\n".join(parts) if parts else None
