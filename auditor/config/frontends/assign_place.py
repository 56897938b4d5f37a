"""Whether a module runs the assignment a rule quotes, at the place the rule names: the one place
that decides if a `[[model_setting]]` (rules/chatlearn.toml) holds in the run's own checkout.

Text is not code: a commented-out line, or a longer statement holding the rule's code as a
substring (`... = x.num_hidden_layers * 2` holds `... = x.num_hidden_layers`), is not the
assignment. The assignment is HERE when an `Assign` equal to the rule's `code` (as parsed) is in
the rule's `function`, reached for a model of the rule's `architecture`: every `if` it is under
tests `...architectures[0] == "X"` consistently with that architecture (the body where X is it,
the else where X is another; a rule of no architecture is under no such test), or is one of the
rule's `guards` (a condition the rule states holds for that architecture's config.json), taken
in its body; under a loop, `try` or `with`, it is not HERE; nor where the function may assign
the target otherwise for that architecture (a later `= 30`), nor after a `return`/`raise` that
may run. ELSEWHERE when the module may store the key's attribute anywhere else (`+=`, setattr of
it or of a name not written out, a match case, an alias `m.KEY = ...`; another rule's statement of
the key in that rule's function excepted), or has the assignment but not so: what the key becomes
is then not known. ABSENT when neither: the module does not take the key this way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from enum import Enum
from typing import Any


class Place(Enum):
    HERE = "here"
    ELSEWHERE = "elsewhere"
    ABSENT = "absent"


# An enclosing condition: (its test, True in the body / False in the else); test None for a
# loop, `try` or `with`, which no rule's place is under.
_Path = tuple[tuple[ast.expr | None, bool], ...]


def functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module's top-level functions by name."""
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def place(tree: ast.Module, setting: dict[str, Any], siblings: Sequence[dict[str, Any]] = ()) -> Place:
    """Where `tree` has the assignment `setting` (a `[[model_setting]]`) quotes; `siblings` are the
    rules of the same key (each in its own function is no other store of it)."""
    wanted = ast.parse(setting["code"].strip()).body[0]
    if not (isinstance(wanted, ast.Assign) and isinstance(wanted.targets[0], ast.Attribute)):
        raise ValueError(f"{setting['source']}: its code is not an assignment to an attribute")
    code, key = ast.dump(wanted), wanted.targets[0].attr
    table = functions(tree)
    function = table.get(setting["function"])
    mine = dict(_statements(function.body, ())) if function is not None else {}
    known = {s: other for other in siblings if other is not setting and other["function"] in table
             for s, _ in _statements(table[other["function"]].body, ())
             if ast.dump(s) == ast.dump(ast.parse(other["code"].strip()).body[0])}
    covered = {other["architecture"] for other in known.values() if "architecture" in other}
    here = seen = elsewhere = False
    for stmt in (n for n in ast.walk(tree) if isinstance(n, ast.stmt) and _stores(n, key)):
        if stmt in mine and ast.dump(stmt) == code:
            seen = True
            here = here or (_reached(mine[stmt], setting) and not _returned_before(stmt, mine, setting, covered))
        elif not (stmt in known and (stmt not in mine or not _may_run(mine[stmt], setting))):
            elsewhere = True
    if here and not elsewhere:
        return Place.HERE
    return Place.ELSEWHERE if elsewhere or seen else Place.ABSENT


def _stores(stmt: ast.stmt, key: str) -> bool:
    """Whether `stmt` itself (not a statement nested in it) may store attribute `key`: any `.key`
    target (`=`, `+=`, `: T =`, tuple, for, with, del), a `["key"]` target, or a
    setattr/__setattr__ of "key" or of a name not written out."""
    todo: list[ast.AST] = list(ast.iter_child_nodes(stmt))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Attribute) and node.attr == key and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                and isinstance(node.slice, ast.Constant) and node.slice.value == key:
            return True
        if isinstance(node, ast.Call) and _setattr_name(node) in (key, None):
            return True
    return False


def _setattr_name(call: ast.Call) -> str | None:
    """The attribute a setattr()/__setattr__() call stores ("" where the call is none), None where
    its name is not a literal."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "setattr":
        index = 1
    elif isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "setattr"):
        index = 1 if len(call.args) >= 3 else 0
    else:
        return ""
    args = call.args
    if any(isinstance(a, ast.Starred) for a in args[:index + 1]) or len(args) <= index:
        return None
    name = args[index]
    return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


def _returned_before(stmt: ast.stmt, mine: dict[ast.stmt, _Path], setting: dict[str, Any],
                     covered: set[str]) -> bool:
    """Whether a `return`/`raise` of the function, before `stmt`, may run for the setting's model;
    one for an architecture whose own rule of the key the module runs (`covered`: update_cfg's
    Qwen3-Next return, megatron_utils.py:24-25, to :116) leaves that model to that rule."""
    for other, path in mine.items():
        if not isinstance(other, (ast.Return, ast.Raise)) or (other.lineno, other.col_offset) >= (stmt.lineno, stmt.col_offset):
            continue
        if not _may_run(path, setting):
            continue
        if setting.get("architecture") is None and any(
                taken and test is not None and _architecture(test) in covered for test, taken in path):
            continue
        return True
    return False


def _statements(body: list[ast.stmt], path: _Path) -> Iterator[tuple[ast.stmt, _Path]]:
    """Each statement of `body`, nested ones (match cases too) included, with the conditions it is under."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _statements(stmt.body, (*path, (stmt.test, True)))
            yield from _statements(stmt.orelse, (*path, (stmt.test, False)))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # defined here, not run here
        else:
            yield stmt, path
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    yield from _statements(inner, (*path, (None, True)))
            for handler in getattr(stmt, "handlers", []):
                yield from _statements(handler.body, (*path, (None, True)))
            for case in getattr(stmt, "cases", []):
                yield from _statements(case.body, (*path, (None, True)))


def _reached(path: _Path, setting: dict[str, Any]) -> bool:
    """Whether every condition on `path` holds for a model of the setting's architecture."""
    mine, guards = setting.get("architecture"), {ast.dump(ast.parse(g, mode="eval").body) for g in setting.get("guards", [])}
    for test, taken in path:
        if test is None:
            return False
        tested = _architecture(test)
        if tested is not None:
            if mine is None or (tested == mine) != taken:
                return False
        elif not (taken and ast.dump(test) in guards):
            return False
    return True


def _may_run(path: _Path, setting: dict[str, Any]) -> bool:
    """Whether a statement under `path` may run for a model of the setting's architecture: no
    architecture test on it excludes that one (a setting of no architecture: any may run)."""
    mine = setting.get("architecture")
    for test, taken in path:
        tested = _architecture(test) if test is not None else None
        if tested is not None and mine is not None and (tested == mine) != taken:
            return False
    return True


def _architecture(test: ast.expr) -> str | None:
    """X of `<...>.architectures[0] == "X"` (either way round), else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    sides = (test.left, test.comparators[0])
    for name, other in (sides, sides[::-1]):
        if (isinstance(name, ast.Constant) and isinstance(name.value, str)
                and ast.unparse(other).endswith("architectures[0]")):
            return name.value
    return None
