"""What the site finder reads off `ast` nodes (auditor/static/sites/syntax.py), held to Python's
own `ast` on every file of this package and on a compound statement of each kind: the statements
directly inside a compound statement in source order, every parameter of a def, every argument
of a call in source order, and the argument bound to a parameter."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor.static.sites.syntax import all_params, argument, arguments, inner_statements

PACKAGE = Path(__file__).resolve().parents[3] / "auditor"
COMPOUND = '''
try:
    a = 1
except ValueError:
    b = 2
else:
    c = 3
finally:
    d = 4
try:
    q = 0
except* TypeError:
    r = 1
for i in x:
    e = 5
else:
    f = 6
while y:
    g = 7
else:
    h = 8
with open(p) as fh, open(q):
    k = 9
match v:
    case [1, *rest]:
        m = 10
    case {"k": w} if w:
        n = 11
    case _:
        o = 12
'''


def trees() -> list[ast.Module]:
    return [ast.parse(COMPOUND), *(ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py")))]


def direct_statements(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements whose nearest enclosing statement is `stmt`, in source order."""
    found: list[ast.stmt] = []
    stack = list(ast.iter_child_nodes(stmt))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            found.append(node)
        else:
            stack.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda s: (s.lineno, s.col_offset))


def test_inner_statements_are_the_direct_ones_in_source_order() -> None:
    checked = 0
    for tree in trees():
        for stmt in ast.walk(tree):
            if isinstance(stmt, ast.stmt) and not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = inner_statements(stmt)
                assert inner == direct_statements(stmt), ast.dump(stmt)[:200]
                checked += bool(inner)
    assert checked > 1000


def test_every_parameter_with_the_stars_last() -> None:
    for tree in trees():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                params = all_params(node.args)
                assert {id(a) for a in params} == {id(a) for a in ast.walk(node.args) if isinstance(a, ast.arg)}
                stars = [a for a in (node.args.vararg, node.args.kwarg) if a is not None]
                assert params[len(params) - len(stars):] == stars


def test_arguments_in_source_order() -> None:
    for tree in trees():
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            values = [value for _, value in arguments(call)]
            assert values == sorted(values, key=lambda v: (v.lineno, v.col_offset))
            assert len(values) == len(call.args) + len(call.keywords)


@pytest.mark.parametrize(("code", "name", "bound"), [
    ("dist.send(t, 1, group=g)", "dst", "1"),
    ("dist.send(t, dst=2)", "dst", "2"),
    ("dist.send(*xs, dst=3)", "tensor", None),  # a starred argument binds no position
    ("dist.send(t)", "dst", None),
    ("dist.send(t, 1)", None, None),
])
def test_the_argument_bound_to_a_parameter(code: str, name: str | None, bound: str | None) -> None:
    call = ast.parse(code).body[0].value
    assert isinstance(call, ast.Call)
    found = argument(call, ["tensor", "dst", "group", "tag"], name)
    assert (ast.unparse(found) if found is not None else None) == bound
