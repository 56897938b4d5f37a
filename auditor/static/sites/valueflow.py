"""The site finder's side of `flows.py`: where the values of an expression live (its holders:
variables, attributes of `self`, return values, descriptor objects, op references), and what
assignments, returns, loops and calls join, pass on, batch or let escape."""

from __future__ import annotations

import ast
from typing import Any

from auditor.rulebook.apis import ApiTable
from auditor.static.sites.aliases import OpAliases
from auditor.static.sites.flows import ESCAPE, OP_SLOT, SINK, Flows
from auditor.static.sites.scope import Scope
from auditor.static.sites.syntax import argument, arguments

# Calls that store their (last) argument into the object they are called on.
STORES = {"append", "extend", "insert", "add", "appendleft", "put", "put_nowait"}
# Builtins whose result holds the values of their argument, and builtins that keep nothing.
PASS_THROUGH = {"list", "tuple", "reversed", "sorted", "iter"}
INSPECT = {"len", "print", "isinstance", "issubclass", "id", "bool", "str", "repr", "type",
           "hasattr", "callable", "getattr"}


class ValueFlow:
    def __init__(self, table: ApiTable, scope: Scope, aliases: OpAliases, flows: Flows) -> None:
        self.table = table
        self.scope = scope
        self.aliases = aliases
        self.flows = flows

    def holders(self, expr: ast.expr) -> list[Any]:
        """Where the values of `expr` live, as flows.py holders."""
        if isinstance(expr, ast.Starred):
            expr = expr.value
        if isinstance(expr, ast.Name):
            if self.table.by_qualname.get(self.scope.resolve(expr) or "") is None:
                return [self.scope.var(expr.id)]
            if self.aliases.is_alias(expr):
                return [self.scope.var(expr.id), ("ref", id(expr))]  # `snd` of `snd = dist.isend`
            return [("ref", id(expr))]
        if isinstance(expr, ast.Attribute):
            if self.table.by_qualname.get(self.scope.resolve(expr) or "") is not None:
                return [("ref", id(expr))]
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return [("attr", self.scope.class_name(), expr.attr)]
            return []
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return [h for e in expr.elts for h in self.holders(e)]
        if isinstance(expr, ast.Dict):
            return [h for k, v in zip(expr.keys, expr.values) if k is not None
                    for h in self.holders(v)]
        if isinstance(expr, ast.IfExp):
            return self.holders(expr.body) + self.holders(expr.orelse)
        if isinstance(expr, ast.BinOp):
            return self.holders(expr.left) + self.holders(expr.right)
        if isinstance(expr, ast.BoolOp):
            return [h for v in expr.values for h in self.holders(v)]
        if isinstance(expr, ast.Subscript):
            return self.holders(expr.value)
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self.holders(expr.elt) + self.holders(expr.generators[0].iter)
        if isinstance(expr, ast.Call):
            entry = self.table.by_qualname.get(self.scope.resolve(expr.func) or "")
            if entry is not None and entry["issues"] == "descriptor":
                return [("obj", id(expr))]
            callee = self.own_function(expr.func)
            if callee is not None:
                return [("ret", callee[0])]
            if isinstance(expr.func, ast.Name) and expr.func.id in PASS_THROUGH:
                args = arguments(expr)
                if args:
                    return self.holders(args[0][1])
        return []

    def stores(self, target: ast.expr) -> list[Any]:
        """Holders an assignment target stores into: a plain name is local to the scope."""
        if isinstance(target, ast.Starred):
            target = target.value
        if isinstance(target, ast.Name):
            frame = self.scope.names.frame_of(target.id)
            if frame is None or frame is self.scope.names.frames[-1]:
                return [("var", self.scope.frame_names[-1], target.id)]
        if isinstance(target, (ast.Tuple, ast.List)):
            return [h for e in target.elts for h in self.stores(e)]
        return self.holders(target)

    def assign(self, targets: list[ast.expr], value: ast.expr) -> None:
        """`a = b = value` (or `+=`, or a loop's `for target in value`)."""
        values = self.holders(value)
        for target in targets:
            for holder in self.stores(target):
                self.flows.join(holder, values)

    def returns(self, value: ast.expr) -> None:
        """The function being walked returns or yields `value`."""
        self.flows.join(("ret", self.scope.function_name()), self.holders(value))

    def own_function(self, func: ast.expr) -> tuple[str, int] | None:
        """(qualname, parameters to skip) of a function of this module that `func` calls."""
        if isinstance(func, ast.Name):
            if self.scope.resolve(func) == f"{self.scope.module}.{func.id}":
                return func.id, 0
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == "self" and self.scope.self_aliases:
            return f"{self.scope.class_name()}.{func.attr}", 1
        return None

    def call(self, node: ast.Call, entry: dict[str, Any] | None, coalescing: bool) -> None:
        """What a call stores, passes on, or batches; `entry`: the API it calls, if any;
        `coalescing`: whether it is inside a coalescing-manager block."""
        func = node.func
        args = arguments(node) if node.args or node.keywords else []
        if isinstance(func, ast.Attribute) and func.attr in STORES and args:
            values = self.holders(args[-1][1])
            stores = self.holders(func.value)
            for holder in stores:
                self.flows.join(holder, values)
            if not stores:  # `self.queue.ops.append(op)`: kept where this module cannot follow
                self.flows.mark(ESCAPE, values)
        callee = self.own_function(func)
        builtin = func.id if isinstance(func, ast.Name) and \
            self.scope.names.frame_of(func.id) is None else None
        if callee is None and entry is None and builtin not in INSPECT | PASS_THROUGH and not (
                isinstance(func, ast.Attribute) and func.attr in STORES):
            for _, value in args:  # another module's function may batch what it is given
                self.flows.mark(ESCAPE, self.holders(value))
        if callee is not None:
            name, skip = callee
            position = skip
            for keyword, value in args:
                if keyword == "*":
                    continue
                if keyword is not None:
                    self.flows.argument(name, keyword, self.holders(value))
                else:
                    self.flows.argument(name, position, self.holders(value))
                    position += 1
        if entry is None:
            return
        if entry["issues"] == "batch":
            arg = argument(node, entry.get("params", []), entry["params"][0] if entry.get("params") else None)
            if arg is not None:
                self.flows.mark(SINK, self.holders(arg))
        elif entry["issues"] == "descriptor":
            op = argument(node, entry.get("params", []), entry.get("op", "op"))
            if op is not None:
                self.flows.mark(OP_SLOT, self.holders(op))
            if coalescing:
                self.flows.mark(SINK, [("obj", id(node))])
