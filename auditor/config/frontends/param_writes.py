"""What a function can change of an object handed to it, read with the stdlib `ast`.

A recipe that hands its config to a helper (`apply_flex_dispatcher_backend(cfg.model, ...)`,
Megatron-Bridge's recipes) leaves unknown only what the helper may set: its stores on the
parameter (`model_config.moe_token_dispatcher_type = "alltoall"`), wherever they sit (under a
condition or not: each may happen), and what the functions it hands the parameter on to may set,
followed by name. Fail closed: the parameter rebound or aliased (`x = model_config`, `return
model_config`), a method called on it, handed to a function not found, bound through `*args` or
`**kwargs`, or followed too deep is "anything" (None); a sub-object (`param.a`) used so is all of
`a`. `getattr(param, "a")` is `param.a`; an operand of `or`/`and`/`x if c else y` is the object
itself (`m = param or default` aliases it); a getattr with a name not written out or a type() is
the object unless read on the spot. A read in a test, a comparison or an f-string, or by
hasattr/isinstance/len, sets nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

Callee = Callable[[str, Path], "tuple[ast.FunctionDef, Path] | None"]

_MAX_DEPTH = 4
_READS = frozenset({"hasattr", "isinstance", "len", "str", "repr", "id", "print"})
_ALIASES = frozenset({"getattr", "type"})  # what they return is (part of) the object
_READ_PARENTS = (ast.Compare, ast.UnaryOp, ast.BinOp, ast.FormattedValue, ast.JoinedStr)


def writes(fn: ast.FunctionDef, path: Path, param: str, callee: Callee, depth: int = 0) -> frozenset[str] | None:
    """Dotted attribute paths under `param` that `fn` may set ("" is the whole object, a path
    covers everything under it); None where that is not known."""
    if depth > _MAX_DEPTH:
        return None
    parents = {id(child): node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
    out: set[str] = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == param):
            continue
        if not isinstance(node.ctx, ast.Load):
            return None  # rebound: what it names later is not known here
        top, attrs = _chain(node, parents)
        got = _use(top, ".".join(attrs), parents, path, callee, depth)
        if got is None:
            return None
        out |= got
    return frozenset(out)


def _chain(node: ast.expr, parents: dict[int, ast.AST]) -> tuple[ast.expr, list[str]]:
    """The outermost expression that is still the parameter or a part of it, and that part:
    `param.a.b`, `getattr(param, "a")`, `param or default`, `param if c else d`."""
    top, attrs = node, []
    while True:
        parent = parents.get(id(top))
        if isinstance(parent, ast.Attribute) and parent.value is top:
            attrs.append(parent.attr)
        elif (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "getattr"
              and len(parent.args) >= 2 and parent.args[0] is top and isinstance(parent.args[1], ast.Constant)
              and isinstance(parent.args[1].value, str) and not parent.keywords):
            attrs.append(parent.args[1].value)
        elif not (isinstance(parent, ast.BoolOp) or isinstance(parent, ast.IfExp) and parent.test is not top):
            return top, attrs
        assert isinstance(parent, ast.expr)
        top = parent


def _read_on_spot(node: ast.expr, parents: dict[int, ast.AST]) -> bool:
    """Whether `node`'s value is only looked at: compared, tested, formatted or discarded."""
    parent = parents.get(id(node))
    return isinstance(parent, (*_READ_PARENTS, ast.Expr)) or (
        isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and parent.test is node)


def _use(top: ast.expr, dotted: str, parents: dict[int, ast.AST], path: Path, callee: Callee,
         depth: int) -> set[str] | None:
    """What one use of the parameter (`top`, the outermost attribute of its chain) may set."""
    whole = {dotted} if dotted else None  # the object used: all of it may change
    if "__" in dotted:  # `param.__dict__.update(...)`, `param.__class__`: anything
        return None
    if isinstance(top, ast.Attribute) and not isinstance(top.ctx, ast.Load):
        return {dotted}  # `param.a.b = v`, `del param.a`, `param.a += 1`
    if _read_on_spot(top, parents):
        return set()
    parent = parents.get(id(top))
    if isinstance(parent, ast.keyword):
        parent = parents.get(id(parent))
    if not isinstance(parent, ast.Call):
        return whole  # aliased, returned, subscripted, stored: not followed
    if parent.func is top:  # a method of what it is: `param.a.m()` may change `a`
        return {dotted.rpartition(".")[0]} if "." in dotted else None
    name = parent.func.id if isinstance(parent.func, ast.Name) else None
    if name in _READS:
        return set()
    if name in _ALIASES:  # `getattr(p, n)`, `type(p)`: the object, unless only looked at
        return set() if _read_on_spot(parent, parents) else whole
    found = callee(name, path) if name else None
    param = bound(found[0], parent, top) if found else None
    if found is None or param is None:
        return whole
    inner = writes(found[0], found[1], param, callee, depth + 1)
    if inner is None:
        return whole
    return {".".join(p for p in (dotted, w) if p) for w in inner}


def bound(fn: ast.FunctionDef, call: ast.Call, arg: ast.expr) -> str | None:
    """The parameter of `fn` that `arg` of `call` binds; None through *args/**kwargs or unmatched."""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    for k, given in enumerate(call.args):
        if given is arg:
            return params[k] if k < len(params) and not any(isinstance(a, ast.Starred) for a in call.args[:k + 1]) \
                else None
    names = {*params, *(a.arg for a in fn.args.kwonlyargs)}
    return next((kw.arg for kw in call.keywords if kw.value is arg and kw.arg in names), None)
