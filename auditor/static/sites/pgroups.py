"""Which receivers of `.send`/`.recv` are process groups, as the site finder walks a module:
names annotated `ProcessGroup` or bound to what a factory such as `dist.new_group` makes, per
function, and attributes of `self` that hold one, per class (set in any of its methods).

The types and factories are data (`rules/torch.toml`: `pg_types`, `pg_factories`)."""

from __future__ import annotations

import ast

from auditor.rulebook.apis import ApiTable
from auditor.static.sites.scope import Scope
from auditor.static.source import Source
from auditor.static.sites.syntax import all_params, expressions, inner_statements, self_attr


class ProcessGroups:
    def __init__(self, table: ApiTable, source: Source, scope: Scope) -> None:
        self.table = table
        self.source = source
        self.scope = scope
        self.names: list[set[str]] = [set()]  # per function, the module's own first
        self.attrs: list[set[str]] = []  # per class: attributes of `self`

    def is_annotation(self, ann: ast.expr) -> bool:
        for sub in expressions(ann):
            if isinstance(sub, ast.Constant):
                if isinstance(sub.value, str) and not self.source.concatenated(sub) and \
                        sub.value.rsplit(".", 1)[-1] == "ProcessGroup":
                    return True
            elif self.scope.resolve(sub) in self.table.pg_types:
                return True
        return False

    def is_expr(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Call):
            return self.scope.resolve(expr.func) in self.table.pg_factories
        if self.scope.resolve(expr) in self.table.pg_factories:
            return True
        if isinstance(expr, ast.Name):
            return any(expr.id in names for names in self.names)
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id == "self"
            and self.attrs
        ):
            return expr.attr in self.attrs[-1]
        return False

    def class_attrs(self, node: ast.ClassDef) -> tuple[set[str], dict[str, str]]:
        """Attributes of `self` that hold a process group, and those set to torch (a module or
        an API: `self.d = torch.distributed`), from any method of the class (statements only:
        no expression binds an attribute; nested classes are their own)."""
        attrs: set[str] = set()
        aliases: dict[str, str] = {}
        pg_params: set[str] = set()
        stack: list[ast.stmt] = list(reversed(node.body))
        while stack:
            stmt = stack.pop()
            if isinstance(stmt, ast.ClassDef):
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                pg_params = {p.arg for p in all_params(stmt.args)
                             if p.annotation is not None and self.is_annotation(p.annotation)}
            elif isinstance(stmt, ast.AnnAssign):
                name = self_attr(stmt.target) or (
                    stmt.target.id if isinstance(stmt.target, ast.Name) else None)
                if name and self.is_annotation(stmt.annotation):
                    attrs.add(name)
            elif isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    name = self_attr(t)
                    if name is None:
                        continue
                    v = stmt.value
                    if (isinstance(v, ast.Name) and v.id in pg_params) or self.is_expr(v):
                        attrs.add(name)
                    target = self.scope.names.resolve(v)
                    if target is not None and target.split(".")[0] == "torch":
                        aliases[name] = target
            stack.extend(reversed(inner_statements(stmt)))
        return attrs, aliases
