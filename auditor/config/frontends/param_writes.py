"""What a function can change of an object handed to it, read with the stdlib `ast`.

A recipe that hands its config to a helper (`apply_flex_dispatcher_backend(cfg.model, ...)`,
Megatron-Bridge's recipes) leaves unknown only what the helper may set: its stores on the
parameter (`model_config.moe_token_dispatcher_type = "alltoall"`), wherever they sit (under a
condition or not: each may happen), and what the functions it hands the parameter on to may set,
followed by name. Fail closed: the parameter rebound or aliased (`x = model_config`, `return
model_config`), a method called on it, handed to a function not found, bound through `*args` or
`**kwargs`, or followed too deep is "anything" (None); a sub-object (`param.a`) used so is all of
`a`. A read in a test, a comparison or an f-string, or by getattr/hasattr/isinstance, sets nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

Callee = Callable[[str, Path], "tuple[ast.FunctionDef, Path] | None"]

_MAX_DEPTH = 4
_READS = frozenset({"getattr", "hasattr", "isinstance", "len", "str", "repr", "type", "id", "print"})
_READ_PARENTS = (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.FormattedValue, ast.JoinedStr)


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
        top: ast.expr = node
        attrs: list[str] = []
        while isinstance(parent := parents.get(id(top)), ast.Attribute) and parent.value is top:
            attrs.append(parent.attr)
            top = parent
        got = _use(top, ".".join(attrs), parents, path, callee, depth)
        if got is None:
            return None
        out |= got
    return frozenset(out)


def _use(top: ast.expr, dotted: str, parents: dict[int, ast.AST], path: Path, callee: Callee,
         depth: int) -> set[str] | None:
    """What one use of the parameter (`top`, the outermost attribute of its chain) may set."""
    whole = {dotted} if dotted else None  # the object used: all of it may change
    if "__" in dotted:  # `param.__dict__.update(...)`, `param.__class__`: anything
        return None
    if isinstance(top, ast.Attribute) and not isinstance(top.ctx, ast.Load):
        return {dotted}  # `param.a.b = v`, `del param.a`, `param.a += 1`
    parent = parents.get(id(top))
    if isinstance(parent, _READ_PARENTS) or (isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert))
                                             and parent.test is top):
        return set()
    if isinstance(parent, ast.keyword):
        parent = parents.get(id(parent))
    if not isinstance(parent, ast.Call):
        return whole  # aliased, returned, subscripted, stored: not followed
    if parent.func is top:  # a method of what it is: `param.a.m()` may change `a`
        return {dotted.rpartition(".")[0]} if "." in dotted else None
    name = parent.func.id if isinstance(parent.func, ast.Name) else None
    if name in _READS:  # a read, unless what it returns is used on the spot (`getattr(p, n).x = 1`)
        return set() if not isinstance(parents.get(id(parent)), (ast.Attribute, ast.Subscript)) else whole
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
