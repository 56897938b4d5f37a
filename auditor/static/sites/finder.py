"""One walk of a module's `ast` tree that records every P2P site it meets (`sites.py` says which
spellings), with what the walk learns on the way kept apart: where it is (`scope.py`), which
receivers are process groups (`pgroups.py`), ops under another name (`aliases.py`) and where
values go (`valueflow.py`). Sites are pending until the module's flows are known (`finish`)."""

from __future__ import annotations

import ast
from typing import Any

from auditor.rulebook.apis import ApiTable
from auditor.static.sites.aliases import OpAliases
from auditor.static.exports import Routes
from auditor.static.sites.flows import ESCAPE, OP_SLOT, SINK, Flows
from auditor.static.names import dotted
from auditor.static.sites.pending import Pending
from auditor.static.sites.pgroups import ProcessGroups
from auditor.static.sites.scope import Scope
from auditor.static.source import Source
from auditor.static.sites.syntax import all_params, argument, arguments, members
from auditor.static.sites.valueflow import ValueFlow

PARTIAL = {"functools.partial"}
# Builtins whose arguments are looked at, not called: `isinstance(op, P2POp)` is no site.
TYPE_TESTS = {"isinstance", "issubclass"}


class Finder:
    """Like a libcst visitor, `visit_X` runs before the node's children and may walk them itself
    (returning False), `leave_X` after them."""

    def __init__(self, source: Source, name: str, is_package: bool, table: ApiTable,
                 received: Routes | None = None) -> None:
        self.source = source
        self.table = table
        self.scope = Scope(name, is_package, received or Routes())
        self.groups = ProcessGroups(table, source, self.scope)
        self.aliases = OpAliases(self.scope, source)
        self.flows = Flows()
        self.values = ValueFlow(table, self.scope, self.aliases, self.flows)
        self.coalescing: list[int] = [0]
        self.comparing = 0  # inside a comparison or a type test: references are not sites
        self.type_tests: set[int] = set()
        self.descriptors: list[Pending] = []
        self.references: list[Pending] = []
        self.consumed: set[int] = set()
        self.found: list[Pending] = []
        self.ranks = 0

    # --- the walk ------------------------------------------------------------------------------

    # Per node type, the (visit, leave) functions of the class: kept on the class, so that a
    # finder holds no bound methods of itself and is freed without the cycle collector.
    _handlers: dict[type, tuple[Any, Any]] = {}

    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        handlers = Finder._handlers.get(kind)
        if handlers is None:
            handlers = (getattr(Finder, f"visit_{kind.__name__}", None),
                        getattr(Finder, f"leave_{kind.__name__}", None))
            Finder._handlers[kind] = handlers
        enter, leave = handlers
        if enter is None or enter(self, node) is not False:
            for child in ast.iter_child_nodes(node):
                self.visit(child)
        if leave is not None:
            leave(self, node)

    def visit_all(self, nodes: list[Any]) -> None:
        for node in nodes:
            self.visit(node)

    # --- scopes --------------------------------------------------------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> bool:
        self.visit_all([*node.decorator_list, *node.bases, *(k.value for k in node.keywords)])
        self.scope.bind_definition(node.name)
        self.scope.enter("class", node.name)
        pg_attrs, aliases = self.groups.class_attrs(node)
        self.groups.attrs.append(pg_attrs)
        self.scope.self_aliases.append(aliases)
        self.visit_all(node.body)
        self.scope.leave()
        self.groups.attrs.pop()
        self.scope.self_aliases.pop()
        return False

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        self.visit_all(node.decorator_list)
        self.scope.bind_definition(node.name)
        self._enter_function(node.name, node.args)
        self.visit_all(node.body)
        self._leave_function()
        return False

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> bool:
        self._enter_function("<lambda>", node.args)
        self.visit(node.body)
        self._leave_function()
        return False

    def _enter_function(self, name: str, params: ast.arguments) -> None:
        self.scope.enter("function", name)
        self.coalescing.append(0)
        self.flows.params[self.scope.function_name()] = [p.arg for p in all_params(params)]
        pgs: set[str] = set()
        for p in all_params(params):
            self.scope.names.bind(p.arg, None)
            if p.annotation is not None and self.groups.is_annotation(p.annotation):
                pgs.add(p.arg)
        self.groups.names.append(pgs)

    def _leave_function(self) -> None:
        self.scope.leave()
        self.coalescing.pop()
        self.groups.names.pop()

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> bool:
        self.scope.names.bind_import(node)
        if isinstance(node, ast.ImportFrom) and not node.level and node.names[0].name == "*":
            self._bind_star(node.module or "")
        return False

    def _bind_star(self, module: str) -> None:
        """`from torch.distributed import *` binds the module's public names, the P2P API among
        them (`isend(t, 1)` is torch's): each API whose qualname is `module.NAME`, NAME public."""
        for qualname in [*self.table.by_qualname, *self.table.coalescing]:
            owner, _, name = qualname.rpartition(".")
            if owner == module and not name.startswith("_"):
                self.scope.names.bind(name, qualname)

    visit_ImportFrom = visit_Import

    # --- bindings ------------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> bool:
        self.values.assign(node.targets, node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self._assign_name(node.targets[0].id, node.value)
        # A name being bound is not a use of what it held (`p2p_op = dist.irecv` after
        # `p2p_op = dist.isend` is no isend site).
        self.visit_all([t for t in node.targets if not isinstance(t, ast.Name)])
        self.visit(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            # `c10d = torch.distributed.distributed_c10d` aliases; anything else shadows.
            self.scope.names.bind(node.targets[0].id, self.scope.resolve(node.value))
        return False

    def _assign_name(self, target: str, value: ast.expr) -> None:
        entry = self.table.by_qualname.get(self.scope.resolve(value) or "")
        if entry is not None:
            # An alias is reported where it is used; at the assignment only if it never is.
            pending = self._pending(value, entry, form="reference")
            self.consumed.add(id(value))
            self.aliases.add_alias(target, pending, entry)
        elif isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
            self._table(target, value)
        elif self.groups.is_expr(value):
            self.groups.names[-1].add(target)

    def _table(self, name: str, literal: ast.Dict | ast.List | ast.Tuple) -> None:
        """`OPS = {"send": dist.isend, ...}`: ops kept in a table are sites where the table is
        called (`OPS[k](...)`), and at the table only if it never is."""
        found: dict[Any, dict[str, Any]] = {}
        pendings = []
        for key, value in members(literal, self.source):
            entry = self.table.by_qualname.get(self.scope.resolve(value) or "")
            if entry is not None:
                found[key] = entry
                pendings.append(self._pending(value, entry, form="reference"))
                self.consumed.add(id(value))
        if found:
            self.aliases.add_table(name, pendings, found)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.values.assign([node.target], node.value)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.values.returns(node.value)

    def visit_Yield(self, node: ast.Yield) -> None:
        if node.value is not None:
            self.values.returns(node.value)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.values.assign([node.target], node.iter)

    visit_AsyncFor = visit_For

    def visit_AnnAssign(self, node: ast.AnnAssign) -> bool:
        if isinstance(node.target, ast.Name) and self.groups.is_annotation(node.annotation):
            self.groups.names[-1].add(node.target.id)
        self.visit(node.target)  # `ops: list[dist.P2POp]` names a type, it issues nothing
        if node.value is not None:
            self.visit(node.value)
        return False

    def visit_Compare(self, node: ast.Compare) -> None:
        self.comparing += 1  # `op_types == {dist.isend}` names ops, it issues none

    def leave_Compare(self, node: ast.Compare) -> None:
        self.comparing -= 1

    # --- coalescing blocks ---------------------------------------------------------------------

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        if any(self._is_coalescing(item.context_expr) for item in node.items):
            self.coalescing[-1] += 1

    def leave_With(self, node: ast.With | ast.AsyncWith) -> None:
        if any(self._is_coalescing(item.context_expr) for item in node.items):
            self.coalescing[-1] -= 1

    visit_AsyncWith, leave_AsyncWith = visit_With, leave_With

    def _is_coalescing(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Call) and self.scope.resolve(expr.func) in self.table.coalescing

    # --- sites ---------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        self.consumed.add(id(node.func))
        qn = self.scope.resolve(node.func)
        entry = self.table.by_qualname.get(qn or "")
        self.values.call(node, entry, self.coalescing[-1] > 0)
        if isinstance(node.func, ast.Name) and node.func.id in TYPE_TESTS and \
                self.scope.names.frame_of(node.func.id) is None:
            self.comparing += 1
            self.type_tests.add(id(node))
        if entry is not None:
            for each in self.aliases.entries(node.func, entry):
                fields: dict[str, Any] = {"via": self.aliases.use(node.func)}
                if each["issues"] == "descriptor":
                    fields["op"] = self._descriptor_op(node, each)
                self.found.append(self._pending(node, each, form="call", **fields))
            return
        for member in self.aliases.table_calls(node):
            self.found.append(self._pending(node, member, form="call", via=dotted(node.func.value)))  # type: ignore[attr-defined]
        if qn in PARTIAL and (node.args or node.keywords):
            inner = arguments(node)[0][1]
            inner_entry = self.table.by_qualname.get(self.scope.resolve(inner) or "")
            if inner_entry is not None:
                self.consumed.add(id(inner))
                self.found.append(self._pending(node, inner_entry, form="partial", offset=1))
            return
        if isinstance(node.func, ast.Attribute):
            method = self.table.pg_methods.get(node.func.attr)
            if method is not None and self.groups.is_expr(node.func.value):
                self.found.append(self._method_site(node, method))

    def leave_Call(self, node: ast.Call) -> None:
        if id(node) in self.type_tests:
            self.comparing -= 1

    def visit_Attribute(self, node: ast.Attribute) -> bool:
        # Only the value is walked, unless the node is itself a site (then its value is just the
        # module, `dist` in `dist.irecv`).
        if id(node) in self.consumed or not self._reference(node):
            self.visit(node.value)  # `dist.irecv(...).wait()`: the call inside is a site
        return False

    def visit_Name(self, node: ast.Name) -> None:
        self._reference(node)

    def _reference(self, node: ast.Name | ast.Attribute) -> bool:
        """Records a reference site; True when the node was one (or is consumed by one)."""
        if id(node) in self.consumed:
            return True
        entry = self.table.by_qualname.get(self.scope.resolve(node) or "")
        if entry is None:
            return False
        if self.comparing:
            return True
        for each in self.aliases.entries(node, entry):
            self.found.append(self._pending(node, each, form="reference", via=self.aliases.use(node)))
        return True

    def _descriptor_op(self, node: ast.Call, entry: dict[str, Any]) -> str | None:
        arg = argument(node, entry.get("params", []), entry.get("op", "op"))
        if arg is None:
            return None
        self.consumed.add(id(arg))
        op_entry = self.table.by_qualname.get(self.scope.resolve(arg) or "")
        if op_entry is not None:
            self.aliases.use(arg)
            return op_entry["name"]
        return self._code(arg)

    def _pending(self, node: ast.expr, entry: dict[str, Any], form: str, offset: int = 0,
                 **extra: Any) -> Pending:
        """A site of `entry`; `offset` skips leading arguments (the function of a partial)."""
        issues = entry["issues"]
        # A descriptor's own flag is decided once the module's flows are known (`finish`).
        batched = issues in ("batch", "fused") or self.coalescing[-1] > 0
        group: str | None = "unknown"  # a reference: the group is chosen where it is called
        peer = None
        if isinstance(node, ast.Call):
            params = entry.get("params", [])
            group = self._arg_text(node, params, entry.get("group"), offset) or "default"
            for name in entry.get("peer", []):
                peer = self._arg_text(node, params, name, offset)
                if peer is not None:
                    break
        fields = {
            "api": entry["name"],
            "batched": batched,
            "group": group,
            "peer": peer,
            "form": form,
            "issues": issues,
            **extra,
        }
        pending = Pending(node, self.scope.function_name(), self._rank(), fields)
        if issues == "descriptor" and form == "call":
            self.descriptors.append(pending)
        elif form == "reference":
            self.references.append(pending)
        return pending

    def finish(self) -> list[Pending]:
        """The module's sites: descriptors batched where a batch takes them, and references
        left out where they are the op of a descriptor."""
        self.flows.close()
        for p in self.descriptors:
            obj = ("obj", id(p.node))
            p.fields["batched"] = p.fields["batched"] or self.flows.reaches(obj, SINK) or \
                self.flows.reaches(obj, ESCAPE)
        described = {id(p.node) for p in self.references
                     if self.flows.reaches(("ref", id(p.node)), OP_SLOT)}
        pending = [p for p in [*self.found, *self.aliases.never_called()] if id(p.node) not in described]
        return sorted(pending, key=lambda p: p.rank)

    def _method_site(self, node: ast.Call, method: dict[str, Any]) -> Pending:
        args = arguments(node)
        fields = {
            "api": method["name"],
            "batched": self.coalescing[-1] > 0,
            "group": self._code(node.func.value),  # type: ignore[attr-defined]
            "peer": self._code(args[1][1]) if len(args) > 1 else None,
            "form": "method",
            "issues": method["issues"],
        }
        return Pending(node, self.scope.function_name(), self._rank(), fields)

    def _rank(self) -> int:
        self.ranks += 1
        return self.ranks

    def _code(self, node: ast.AST) -> str:
        return self.source.segment(node).strip()

    def _arg_text(self, call: ast.Call, params: list[str], name: str | None, offset: int) -> str | None:
        arg = argument(call, params, name, offset)
        return self._code(arg) if arg is not None else None
