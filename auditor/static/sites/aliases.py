"""Ops the site finder meets under another name, in one module: an alias (`snd = dist.isend`,
one per assignment: `op = dist.isend` in one branch, `op = dist.irecv` in the other) and a table
(`OPS = {"send": dist.isend}`). Each is a site where it is called, and where it was made only if
it never is."""

from __future__ import annotations

import ast
from typing import Any

from auditor.static.sites.pending import Pending
from auditor.static.sites.scope import Scope
from auditor.static.source import Source
from auditor.static.sites.syntax import constant


class OpAliases:
    def __init__(self, scope: Scope, source: Source) -> None:
        self.scope = scope
        self.source = source
        # (id(frame), "snd") -> [[the reference, called at least once?, its API], ...]
        self.aliases: dict[tuple[int, str], list[list[Any]]] = {}
        # (id(frame), "OPS") -> [the references, called?, key -> API]
        self.tables: dict[tuple[int, str], list[Any]] = {}

    def add_alias(self, name: str, reference: Pending, entry: dict[str, Any]) -> None:
        """`name = <reference to entry's API>` in the innermost frame."""
        key = (id(self.scope.names.frames[-1]), name)
        self.aliases.setdefault(key, []).append([reference, False, entry])

    def add_table(self, name: str, references: list[Pending], members: dict[Any, dict[str, Any]]) -> None:
        """`name = {key: <reference>, ...}` (or a list, a tuple) in the innermost frame."""
        self.tables[(id(self.scope.names.frames[-1]), name)] = [references, False, members]

    def is_alias(self, name: ast.Name) -> bool:
        return (id(self.scope.names.frame_of(name.id)), name.id) in self.aliases

    def use(self, func: ast.expr) -> str | None:
        """The alias `func` calls or names (marking it called), None when it is no alias."""
        if not isinstance(func, ast.Name):
            return None
        frame = self.scope.names.frame_of(func.id)
        alias = self.aliases.get((id(frame), func.id))
        if alias is None:
            return None
        for assignment in alias:
            assignment[1] = True
        return func.id

    def entries(self, func: ast.expr, entry: dict[str, Any]) -> list[dict[str, Any]]:
        """Every API an alias was assigned (each assignment's own), else `entry`."""
        if isinstance(func, ast.Name):
            alias = self.aliases.get((id(self.scope.names.frame_of(func.id)), func.id))
            if alias:
                return list({e["name"]: e for _, _, e in alias}.values())
        return [entry]

    def table_calls(self, node: ast.Call) -> list[dict[str, Any]]:
        """The APIs a call through a table can be: the member its constant key names, else any."""
        func = node.func
        if not (isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name)):
            return []
        table = self.tables.get((id(self.scope.names.frame_of(func.value.id)), func.value.id))
        if table is None:
            return []
        table[1] = True
        index = self.source.index(func)
        key = constant(index, self.source) if index is not None else None
        if key in table[2]:
            return [table[2][key]]
        return list({e["name"]: e for e in table[2].values()}.values())

    def never_called(self) -> list[Pending]:
        """The references of aliases and tables that no call went through: sites where made."""
        out = [p for assignments in self.aliases.values() for p, called, _ in assignments
               if not called]
        out += [p for refs, called, _ in self.tables.values() if not called for p in refs]
        return out
