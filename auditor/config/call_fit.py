"""Whether a release of one framework can take the calls another framework's code makes into it.

verl's Megatron workers build their TransformerConfig with `AutoBridge.from_config(hf_config,
dtype=dtype)` (0.6.1 on, and the checkout b178a3cd56): mbridge 0.1.x-0.13.x declare
`from_config(cls, hf_config)`, so that call raises TypeError at start-up and the pair cannot run;
mbridge 0.15.1's `from_config(cls, hf_config, **kwargs)` takes it. Which call and which definition
are data (`[[call_fit]]` of the caller's rules file); both are read from the releases' own source
(stdlib ast, never imported). Anything not read (a file or definition missing, `*args` at the
call) says nothing: the combination stays judged.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from auditor.sources import SourceSet


def fits(entry: dict[str, str], caller: SourceSet, callee: SourceSet) -> bool:
    """False only where every definition of `callee_def` in `callee` is read and cannot bind some
    call `call` in the caller's file (a keyword it does not take, too many positional arguments)."""
    calls = _calls(_file(caller, entry["caller"]), entry["call"])
    defs = _defs(_file(callee, entry["callee_source"]), entry["callee_def"])
    if not calls or not defs:
        return True
    return all(any(_binds(call, d) for d in defs) for call in calls)


def _file(src: SourceSet, rel: str) -> Path:
    """`rel` (a path from the distribution's top: verl/workers/...) in a wheel's root, or in a
    checkout's package folder (`src.root` is the verl/ of the clone)."""
    first, _, rest = rel.partition("/")
    return src.root / rest if src.root.name == first and not (src.root / rel).is_file() else src.root / rel


@functools.lru_cache(maxsize=64)
def _tree(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def _calls(path: Path, dotted: str) -> list[ast.Call]:
    """Every `Owner.name(...)` call in the file (`dotted` = "Owner.name")."""
    tree = _tree(path)
    owner, _, name = dotted.rpartition(".")
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == name and isinstance(n.func.value, ast.Name) and n.func.value.id == owner] \
        if tree is not None else []


def _defs(path: Path, dotted: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every method `name` of class `Owner` in the file (`dotted` = "Owner.name")."""
    tree = _tree(path)
    owner, _, name = dotted.rpartition(".")
    if tree is None:
        return []
    return [f for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name == owner for f in c.body
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == name]


def _binds(call: ast.Call, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether Python can bind the call's arguments to the method's parameters (its first, `cls`
    or `self`, bound already unless it is a staticmethod)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True  # *args / **kwargs at the call: what they hold is not read
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    params = [*fn.args.posonlyargs, *fn.args.args][0 if static else 1:]
    if len(call.args) > len(params) and fn.args.vararg is None:
        return False
    named = {p.arg for p in params[len(call.args):]} | {p.arg for p in fn.args.kwonlyargs}
    return fn.args.kwarg is not None or all(k.arg in named for k in call.keywords)
