"""What the site finder reads off `ast` nodes before it knows what any name means: a call's
arguments, a def's parameters, the blocks of a compound statement, the members of a literal and
its constant keys."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from auditor.static.source import Source


def inner_statements(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements directly inside a compound statement, in source order."""
    out: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list):
            out.extend(block)
        if name == "body":  # a try's handlers come between its body and its else
            for handler in getattr(stmt, "handlers", ()):
                out.extend(handler.body)
    if isinstance(stmt, ast.Match):
        for case in stmt.cases:
            out.extend(case.body)
    return out


def members(literal: ast.Dict | ast.List | ast.Tuple, source: Source) -> list[tuple[Any, ast.expr]]:
    """(key, value) of a dict display, (index, value) of a list or tuple display."""
    if isinstance(literal, ast.Dict):
        return [(constant(k, source), v) for k, v in zip(literal.keys, literal.values) if k is not None]
    return [(i, e) for i, e in enumerate(literal.elts) if not isinstance(e, ast.Starred)]


def constant(expr: ast.expr, source: Source) -> Any:
    """A key written as one string literal or an integer."""
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, (str, bytes)):
            return None if source.concatenated(expr) else expr.value
        if type(expr.value) is int:
            return expr.value
    return None


def self_attr(expr: ast.expr) -> str | None:
    """`name` of `self.name`."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        if expr.value.id == "self":
            return expr.attr
    return None


def all_params(params: ast.arguments) -> list[ast.arg]:
    """Every parameter of a def or lambda, `*args` and `**kwargs` last."""
    out = [*params.posonlyargs, *params.args, *params.kwonlyargs]
    for star in (params.vararg, params.kwarg):
        if star is not None:
            out.append(star)
    return out


def expressions(node: ast.expr) -> Iterator[ast.expr]:
    """The node and every Name/Attribute/string inside it (for annotations like Optional[X])."""
    stack: list[ast.AST] = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, (ast.Name, ast.Attribute)) or \
                (isinstance(cur, ast.Constant) and isinstance(cur.value, str)):
            yield cur
            if isinstance(cur, ast.Attribute):
                continue
        stack.extend(ast.iter_child_nodes(cur))


def arguments(call: ast.Call) -> list[tuple[str | None, ast.expr]]:
    """(keyword, value) of each argument in source order: None for a positional one, "*" for
    `*args` and `**kwargs` (their values are the starred expressions)."""
    out: list[tuple[str | None, ast.expr]] = [
        ("*", a.value) if isinstance(a, ast.Starred) else (None, a) for a in call.args]
    if call.keywords:
        out += [(k.arg if k.arg is not None else "*", k.value) for k in call.keywords]
        out.sort(key=lambda kv: (kv[1].lineno, kv[1].col_offset))
    return out


def argument(call: ast.Call, params: list[str], name: str | None, offset: int = 0) -> ast.expr | None:
    """The argument bound to parameter `name`, by keyword or by position."""
    if name is None:
        return None
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if name in params:
        index = params.index(name) + offset
        positional = [a for a in call.args if not isinstance(a, ast.Starred)]
        if index < len(positional):
            return positional[index]
    return None
