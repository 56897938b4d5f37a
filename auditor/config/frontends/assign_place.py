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
the target otherwise for that architecture (a later `= 30`). ELSEWHERE when the function assigns
the target but not so, or the same assignment is elsewhere in the module: what the key becomes
is then not known. ABSENT when neither: the module does not take the key this way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
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


def place(tree: ast.Module, setting: dict[str, Any]) -> Place:
    """Where `tree` has the assignment `setting` (a `[[model_setting]]`) quotes."""
    wanted = ast.parse(setting["code"].strip()).body[0]
    if not isinstance(wanted, ast.Assign):
        raise ValueError(f"{setting['source']}: its code is not an assignment")
    code, target = ast.dump(wanted), [ast.dump(t) for t in wanted.targets]
    function = functions(tree).get(setting["function"])
    if function is not None:
        same = [(s, path) for s, path in _statements(function.body, ())
                if isinstance(s, ast.Assign) and [ast.dump(t) for t in s.targets] == target]
        if any(ast.dump(s) == code and _reached(path, setting) for s, path in same) and all(
                ast.dump(s) == code or not _may_run(path, setting) for s, path in same):
            return Place.HERE
        if same:
            return Place.ELSEWHERE
    if any(isinstance(n, ast.Assign) and ast.dump(n) == code for n in ast.walk(tree)):
        return Place.ELSEWHERE
    return Place.ABSENT


def _statements(body: list[ast.stmt], path: _Path) -> Iterator[tuple[ast.stmt, _Path]]:
    """Each statement of `body`, nested ones included, with the conditions it is under."""
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
