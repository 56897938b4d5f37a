"""Finds every P2P call site in one module, however the API is spelled.

Spellings covered: `torch.distributed.X`, `import torch.distributed as dist`, `from torch import
distributed`, `from torch.distributed import isend as snd`, `distributed_c10d.X`, names the
package hands on (star imports, re-exports: `exports.py`), simple aliases (`snd = dist.isend`,
`backend = dist`, in several branches), `self.d = torch.distributed`, `getattr(dist, "isend")`,
ops kept in a table (`OPS["send"](...)`), a module's own defs (torch's `send` in torch itself),
`functools.partial(dist.isend, ...)`, ops passed as values (`ops.append(dist.irecv)`), ops in a
coalescing-manager block, and `ProcessGroup.send/recv` where the receiver is known to be a process
group (annotated, or made by a factory such as `dist.new_group`). An op that becomes a `P2POp`
(`P2POp(dist.isend, ...)`, or through a helper's parameter) is part of that descriptor, and a
descriptor is batched where data flow takes it into a batch (`flows.py`); names in comparisons and
type tests are not sites. Which names are APIs is data: `rules/torch.toml`.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass, field
from typing import Any

from auditor.rulebook.apis import ApiTable, load_table
from auditor.static.exports import Routes
from auditor.static.flows import ESCAPE, OP_SLOT, SINK, Flows
from auditor.static.names import Scopes, dotted, qualname
from auditor.static.source import Source, parse

PARTIAL = {"functools.partial"}
# Calls that store their (last) argument into the object they are called on.
STORES = {"append", "extend", "insert", "add", "appendleft", "put", "put_nowait"}
# Builtins whose result holds the values of their argument, and builtins that keep nothing.
PASS_THROUGH = {"list", "tuple", "reversed", "sorted", "iter"}
INSPECT = {"len", "print", "isinstance", "issubclass", "id", "bool", "str", "repr", "type",
           "hasattr", "callable", "getattr"}
# Builtins whose arguments are looked at, not called: `isinstance(op, P2POp)` is no site.
TYPE_TESTS = {"isinstance", "issubclass"}


@dataclass
class Site:
    id: str
    package: str
    path: str
    line: int
    end_line: int
    function: str
    api: str
    batched: bool
    group: str
    peer: str | None = None
    op: str | None = None  # the op a P2POp describes: "isend", "irecv" or the expression
    form: str = "call"  # "call" | "method" | "partial" | "reference"
    issues: str = "op"  # from the rules: "op" | "descriptor" | "batch" | "fused"
    module: str = ""
    via: str | None = None  # the alias a call went through, e.g. "snd"
    text: str = ""  # first line of the expression, for tables and reports

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Pending:
    """A site found in the tree, waiting for its ordinal."""

    node: ast.expr
    function: str
    rank: int  # order of discovery: CST pre-order, i.e. source order
    fields: dict[str, Any] = field(default_factory=dict)


class _Finder:
    """One walk of a module's `ast` tree. Like a libcst visitor, `visit_X` runs before the
    node's children and may walk them itself (returning False), `leave_X` after them."""

    def __init__(self, source: Source, name: str, is_package: bool, table: ApiTable,
                 received: Routes | None = None) -> None:
        self.source = source
        self.table = table
        self.module = name
        received = received or Routes()
        self.scopes = Scopes(name, is_package, received.names, received.attributes)
        self.frame_names: list[str] = ["<module>"]  # parallel to scopes.frames
        self.qualname: list[tuple[str, str]] = []  # (kind, name)
        self.coalescing: list[int] = [0]
        self.comparing = 0  # inside a comparison or a type test: references are not sites
        self.type_tests: set[int] = set()
        self.pg_names: list[set[str]] = [set()]
        self.pg_attrs: list[set[str]] = []
        self.self_aliases: list[dict[str, str]] = []  # per class: `self.d = torch.distributed`
        self.flows = Flows()
        self.descriptors: list[_Pending] = []
        self.references: list[_Pending] = []
        self.consumed: set[int] = set()
        # `snd = dist.isend`: (id(frame), "snd") -> [[a reference, called at least once?], ...],
        # one per assignment (`op = dist.isend` in one branch, `op = dist.irecv` in the other)
        self.aliases: dict[tuple[int, str], list[list[Any]]] = {}
        # `OPS = {"send": dist.isend}`: (id(frame), "OPS") -> [references, called?, key -> API]
        self.tables: dict[tuple[int, str], list[Any]] = {}
        self.found: list[_Pending] = []
        self.ranks = 0

    # --- the walk ------------------------------------------------------------------------------

    # Per node type, the (visit, leave) functions of the class: kept on the class, so that a
    # finder holds no bound methods of itself and is freed without the cycle collector.
    _handlers: dict[type, tuple[Any, Any]] = {}

    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        handlers = _Finder._handlers.get(kind)
        if handlers is None:
            handlers = (getattr(_Finder, f"visit_{kind.__name__}", None),
                        getattr(_Finder, f"leave_{kind.__name__}", None))
            _Finder._handlers[kind] = handlers
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

    def function_name(self) -> str:
        return qualname(self.qualname)

    def visit_ClassDef(self, node: ast.ClassDef) -> bool:
        self.visit_all([*node.decorator_list, *node.bases, *(k.value for k in node.keywords)])
        self._bind_definition(node.name)
        self.qualname.append(("class", node.name))
        self._push("class")
        pg_attrs, aliases = self._class_attrs(node)
        self.pg_attrs.append(pg_attrs)
        self.self_aliases.append(aliases)
        self.visit_all(node.body)
        self.qualname.pop()
        self._pop()
        self.pg_attrs.pop()
        self.self_aliases.pop()
        return False

    def _bind_definition(self, name: str) -> None:
        """A module-level def is `module.name` (torch's own `def send` is the API when the target
        is torch); a nested one only shadows."""
        self.scopes.bind(name, f"{self.module}.{name}" if len(self.scopes.frames) == 1 else None)

    def _push(self, kind: str) -> None:
        self.scopes.push(kind)
        self.frame_names.append(self.function_name())

    def _pop(self) -> None:
        self.scopes.pop()
        self.frame_names.pop()

    def resolve(self, node: ast.AST) -> str | None:
        """`scopes.resolve`, and attributes of `self` its class set to torch."""
        qn = self.scopes.resolve(node)
        if qn is None and self.self_aliases and self.scopes.frame_of("self") is not None:
            text = dotted(node)
            if text is not None and text.startswith("self."):
                _, attr, *rest = text.split(".")
                alias = self.self_aliases[-1].get(attr)
                if alias is not None:
                    return ".".join([alias, *rest])
        return qn

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        self.visit_all(node.decorator_list)
        self._bind_definition(node.name)
        self.qualname.append(("function", node.name))
        self._enter_function(node.args)
        self.visit_all(node.body)
        self._leave_function()
        return False

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> bool:
        self.qualname.append(("function", "<lambda>"))
        self._enter_function(node.args)
        self.visit(node.body)
        self._leave_function()
        return False

    def _enter_function(self, params: ast.arguments) -> None:
        self._push("function")
        self.coalescing.append(0)
        self.flows.params[self.function_name()] = [p.arg for p in _all_params(params)]
        pgs: set[str] = set()
        for p in _all_params(params):
            self.scopes.bind(p.arg, None)
            if p.annotation is not None and self._is_pg_annotation(p.annotation):
                pgs.add(p.arg)
        self.pg_names.append(pgs)

    def _leave_function(self) -> None:
        self.qualname.pop()
        self._pop()
        self.coalescing.pop()
        self.pg_names.pop()

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> bool:
        self.scopes.bind_import(node)
        return False

    visit_ImportFrom = visit_Import

    # --- bindings ------------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> bool:
        values = self._holders(node.value)
        for t in node.targets:
            for holder in self._stores(t):
                self.flows.join(holder, values)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self._assign_name(node.targets[0].id, node.value)
        # A name being bound is not a use of what it held (`p2p_op = dist.irecv` after
        # `p2p_op = dist.isend` is no isend site).
        self.visit_all([t for t in node.targets if not isinstance(t, ast.Name)])
        self.visit(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            # `c10d = torch.distributed.distributed_c10d` aliases; anything else shadows.
            self.scopes.bind(node.targets[0].id, self.resolve(node.value))
        return False

    def _assign_name(self, target: str, value: ast.expr) -> None:
        entry = self.table.by_qualname.get(self.resolve(value) or "")
        if entry is not None:
            # An alias is reported where it is used; at the assignment only if it never is.
            pending = self._pending(value, entry, form="reference")
            self.consumed.add(id(value))
            key = (id(self.scopes.frames[-1]), target)
            self.aliases.setdefault(key, []).append([pending, False, entry])
        elif isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
            self._table(target, value)
        elif self._is_pg_expr(value):
            self.pg_names[-1].add(target)

    def _table(self, name: str, literal: ast.Dict | ast.List | ast.Tuple) -> None:
        """`OPS = {"send": dist.isend, ...}`: ops kept in a table are sites where the table is
        called (`OPS[k](...)`), and at the table only if it never is."""
        members: dict[Any, dict[str, Any]] = {}
        pendings = []
        for key, value in _members(literal, self.source):
            entry = self.table.by_qualname.get(self.resolve(value) or "")
            if entry is not None:
                members[key] = entry
                pendings.append(self._pending(value, entry, form="reference"))
                self.consumed.add(id(value))
        if members:
            self.tables[(id(self.scopes.frames[-1]), name)] = [pendings, False, members]

    def _table_calls(self, node: ast.Call) -> list[dict[str, Any]]:
        """The APIs a call through a table can be: the member its constant key names, else any."""
        func = node.func
        if not (isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name)):
            return []
        table = self.tables.get((id(self.scopes.frame_of(func.value.id)), func.value.id))
        if table is None:
            return []
        table[1] = True
        index = self.source.index(func)
        key = _constant(index, self.source) if index is not None else None
        if key in table[2]:
            return [table[2][key]]
        return list({e["name"]: e for e in table[2].values()}.values())

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        values = self._holders(node.value)
        for holder in self._stores(node.target):
            self.flows.join(holder, values)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.flows.join(("ret", self.function_name()), self._holders(node.value))

    def visit_Yield(self, node: ast.Yield) -> None:
        if node.value is not None:
            self.flows.join(("ret", self.function_name()), self._holders(node.value))

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        values = self._holders(node.iter)
        for holder in self._stores(node.target):
            self.flows.join(holder, values)

    visit_AsyncFor = visit_For

    def visit_Compare(self, node: ast.Compare) -> None:
        self.comparing += 1  # `op_types == {dist.isend}` names ops, it issues none

    def leave_Compare(self, node: ast.Compare) -> None:
        self.comparing -= 1

    # --- data flow (flows.py) ------------------------------------------------------------------

    def _holders(self, expr: ast.expr) -> list[Any]:
        """Where the values of `expr` live, as flows.py holders."""
        if isinstance(expr, ast.Starred):
            expr = expr.value
        if isinstance(expr, ast.Name):
            if self.table.by_qualname.get(self.resolve(expr) or "") is None:
                return [self._var(expr.id)]
            if (id(self.scopes.frame_of(expr.id)), expr.id) in self.aliases:
                return [self._var(expr.id), ("ref", id(expr))]  # `snd` of `snd = dist.isend`
            return [("ref", id(expr))]
        if isinstance(expr, ast.Attribute):
            if self.table.by_qualname.get(self.resolve(expr) or "") is not None:
                return [("ref", id(expr))]
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return [("attr", self._class_name(), expr.attr)]
            return []
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return [h for e in expr.elts for h in self._holders(e)]
        if isinstance(expr, ast.Dict):
            return [h for k, v in zip(expr.keys, expr.values) if k is not None
                    for h in self._holders(v)]
        if isinstance(expr, ast.IfExp):
            return self._holders(expr.body) + self._holders(expr.orelse)
        if isinstance(expr, ast.BinOp):
            return self._holders(expr.left) + self._holders(expr.right)
        if isinstance(expr, ast.BoolOp):
            return [h for v in expr.values for h in self._holders(v)]
        if isinstance(expr, ast.Subscript):
            return self._holders(expr.value)
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self._holders(expr.elt) + self._holders(expr.generators[0].iter)
        if isinstance(expr, ast.Call):
            entry = self.table.by_qualname.get(self.resolve(expr.func) or "")
            if entry is not None and entry["issues"] == "descriptor":
                return [("obj", id(expr))]
            callee = self._own_function(expr.func)
            if callee is not None:
                return [("ret", callee[0])]
            if isinstance(expr.func, ast.Name) and expr.func.id in PASS_THROUGH:
                args = _arguments(expr)
                if args:
                    return self._holders(args[0][1])
        return []

    def _stores(self, target: ast.expr) -> list[Any]:
        """Holders an assignment target stores into: a plain name is local to the scope."""
        if isinstance(target, ast.Starred):
            target = target.value
        if isinstance(target, ast.Name):
            frame = self.scopes.frame_of(target.id)
            if frame is None or frame is self.scopes.frames[-1]:
                return [("var", self.frame_names[-1], target.id)]
        if isinstance(target, (ast.Tuple, ast.List)):
            return [h for e in target.elts for h in self._stores(e)]
        return self._holders(target)

    def _var(self, name: str) -> tuple[str, str, str]:
        frame = self.scopes.frame_of(name)
        for i, f in enumerate(self.scopes.frames):
            if f is frame:
                return ("var", self.frame_names[i], name)
        return ("var", "<module>", name)

    def _class_name(self) -> str:
        classes = [i for i, (kind, _) in enumerate(self.qualname) if kind == "class"]
        return qualname(self.qualname[: classes[-1] + 1]) if classes else "<module>"

    def _own_function(self, func: ast.expr) -> tuple[str, int] | None:
        """(qualname, parameters to skip) of a function of this module that `func` calls."""
        if isinstance(func, ast.Name):
            if self.resolve(func) == f"{self.module}.{func.id}":
                return func.id, 0
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == "self" and self.self_aliases:
            return f"{self._class_name()}.{func.attr}", 1
        return None

    def _flow_call(self, node: ast.Call, entry: dict[str, Any] | None) -> None:
        """What a call stores, passes on, or batches."""
        func = node.func
        args = _arguments(node) if node.args or node.keywords else []
        if isinstance(func, ast.Attribute) and func.attr in STORES and args:
            values = self._holders(args[-1][1])
            stores = self._holders(func.value)
            for holder in stores:
                self.flows.join(holder, values)
            if not stores:  # `self.queue.ops.append(op)`: kept where this module cannot follow
                self.flows.mark(ESCAPE, values)
        callee = self._own_function(func)
        builtin = func.id if isinstance(func, ast.Name) and \
            self.scopes.frame_of(func.id) is None else None
        if callee is None and entry is None and builtin not in INSPECT | PASS_THROUGH and not (
                isinstance(func, ast.Attribute) and func.attr in STORES):
            for _, value in args:  # another module's function may batch what it is given
                self.flows.mark(ESCAPE, self._holders(value))
        if callee is not None:
            name, skip = callee
            position = skip
            for keyword, value in args:
                if keyword == "*":
                    continue
                if keyword is not None:
                    self.flows.argument(name, keyword, self._holders(value))
                else:
                    self.flows.argument(name, position, self._holders(value))
                    position += 1
        if entry is None:
            return
        if entry["issues"] == "batch":
            arg = _argument(node, entry.get("params", []), entry["params"][0] if entry.get("params") else None)
            if arg is not None:
                self.flows.mark(SINK, self._holders(arg))
        elif entry["issues"] == "descriptor":
            op = _argument(node, entry.get("params", []), entry.get("op", "op"))
            if op is not None:
                self.flows.mark(OP_SLOT, self._holders(op))
            if self.coalescing[-1] > 0:
                self.flows.mark(SINK, [("obj", id(node))])

    def visit_AnnAssign(self, node: ast.AnnAssign) -> bool:
        if isinstance(node.target, ast.Name) and self._is_pg_annotation(node.annotation):
            self.pg_names[-1].add(node.target.id)
        self.visit(node.target)  # `ops: list[dist.P2POp]` names a type, it issues nothing
        if node.value is not None:
            self.visit(node.value)
        return False

    # --- coalescing blocks ---------------------------------------------------------------------

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        if any(self._is_coalescing(item.context_expr) for item in node.items):
            self.coalescing[-1] += 1

    def leave_With(self, node: ast.With | ast.AsyncWith) -> None:
        if any(self._is_coalescing(item.context_expr) for item in node.items):
            self.coalescing[-1] -= 1

    visit_AsyncWith, leave_AsyncWith = visit_With, leave_With

    def _is_coalescing(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Call) and self.resolve(expr.func) in self.table.coalescing

    # --- sites ---------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        self.consumed.add(id(node.func))
        qn = self.resolve(node.func)
        entry = self.table.by_qualname.get(qn or "")
        self._flow_call(node, entry)
        if isinstance(node.func, ast.Name) and node.func.id in TYPE_TESTS and \
                self.scopes.frame_of(node.func.id) is None:
            self.comparing += 1
            self.type_tests.add(id(node))
        if entry is not None:
            for each in self._alias_entries(node.func, entry):
                fields: dict[str, Any] = {"via": self._alias_use(node.func)}
                if each["issues"] == "descriptor":
                    fields["op"] = self._descriptor_op(node, each)
                self.found.append(self._pending(node, each, form="call", **fields))
            return
        for member in self._table_calls(node):
            self.found.append(self._pending(node, member, form="call", via=dotted(node.func.value)))  # type: ignore[attr-defined]
        if qn in PARTIAL and (node.args or node.keywords):
            inner = _arguments(node)[0][1]
            inner_entry = self.table.by_qualname.get(self.resolve(inner) or "")
            if inner_entry is not None:
                self.consumed.add(id(inner))
                self.found.append(self._pending(node, inner_entry, form="partial", offset=1))
            return
        if isinstance(node.func, ast.Attribute):
            method = self.table.pg_methods.get(node.func.attr)
            if method is not None and self._is_pg_expr(node.func.value):
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
        entry = self.table.by_qualname.get(self.resolve(node) or "")
        if entry is None:
            return False
        if self.comparing:
            return True
        for each in self._alias_entries(node, entry):
            self.found.append(self._pending(node, each, form="reference", via=self._alias_use(node)))
        return True

    def _alias_use(self, func: ast.expr) -> str | None:
        if not isinstance(func, ast.Name):
            return None
        frame = self.scopes.frame_of(func.id)
        alias = self.aliases.get((id(frame), func.id))
        if alias is None:
            return None
        for assignment in alias:
            assignment[1] = True
        return func.id

    def _alias_entries(self, func: ast.expr, entry: dict[str, Any]) -> list[dict[str, Any]]:
        """Every API an alias was assigned (each assignment's own), else `entry`."""
        if isinstance(func, ast.Name):
            alias = self.aliases.get((id(self.scopes.frame_of(func.id)), func.id))
            if alias:
                return list({e["name"]: e for _, _, e in alias}.values())
        return [entry]

    def _descriptor_op(self, node: ast.Call, entry: dict[str, Any]) -> str | None:
        arg = _argument(node, entry.get("params", []), entry.get("op", "op"))
        if arg is None:
            return None
        self.consumed.add(id(arg))
        op_entry = self.table.by_qualname.get(self.resolve(arg) or "")
        if op_entry is not None:
            self._alias_use(arg)
            return op_entry["name"]
        return self._code(arg)

    def _pending(self, node: ast.expr, entry: dict[str, Any], form: str, offset: int = 0,
                 **extra: Any) -> _Pending:
        """A site of `entry`; `offset` skips leading arguments (the function of a partial)."""
        issues = entry["issues"]
        # A descriptor's own flag is decided once the module's flows are known (`_finish`).
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
        pending = _Pending(node, self.function_name(), self._rank(), fields)
        if issues == "descriptor" and form == "call":
            self.descriptors.append(pending)
        elif form == "reference":
            self.references.append(pending)
        return pending

    def finish(self) -> list[_Pending]:
        """The module's sites: descriptors batched where a batch takes them, and references
        left out where they are the op of a descriptor."""
        self.flows.close()
        for p in self.descriptors:
            obj = ("obj", id(p.node))
            p.fields["batched"] = p.fields["batched"] or self.flows.reaches(obj, SINK) or \
                self.flows.reaches(obj, ESCAPE)
        described = {id(p.node) for p in self.references
                     if self.flows.reaches(("ref", id(p.node)), OP_SLOT)}
        pending = [p for p in self.found if id(p.node) not in described]
        pending += [p for assignments in self.aliases.values() for p, called, _ in assignments
                    if not called and id(p.node) not in described]
        pending += [p for refs, called, _ in self.tables.values() if not called for p in refs
                    if id(p.node) not in described]
        return sorted(pending, key=lambda p: p.rank)

    def _method_site(self, node: ast.Call, method: dict[str, Any]) -> _Pending:
        args = _arguments(node)
        fields = {
            "api": method["name"],
            "batched": self.coalescing[-1] > 0,
            "group": self._code(node.func.value),  # type: ignore[attr-defined]
            "peer": self._code(args[1][1]) if len(args) > 1 else None,
            "form": "method",
            "issues": method["issues"],
        }
        return _Pending(node, self.function_name(), self._rank(), fields)

    def _rank(self) -> int:
        self.ranks += 1
        return self.ranks

    def _code(self, node: ast.AST) -> str:
        return self.source.segment(node).strip()

    def _arg_text(self, call: ast.Call, params: list[str], name: str | None, offset: int) -> str | None:
        arg = _argument(call, params, name, offset)
        return self._code(arg) if arg is not None else None

    # --- process groups ------------------------------------------------------------------------

    def _is_pg_annotation(self, ann: ast.expr) -> bool:
        for sub in _expressions(ann):
            if isinstance(sub, ast.Constant):
                if isinstance(sub.value, str) and not self.source.concatenated(sub) and \
                        sub.value.rsplit(".", 1)[-1] == "ProcessGroup":
                    return True
            elif self.resolve(sub) in self.table.pg_types:
                return True
        return False

    def _is_pg_expr(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Call):
            return self.resolve(expr.func) in self.table.pg_factories
        if self.resolve(expr) in self.table.pg_factories:
            return True
        if isinstance(expr, ast.Name):
            return any(expr.id in names for names in self.pg_names)
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id == "self"
            and self.pg_attrs
        ):
            return expr.attr in self.pg_attrs[-1]
        return False

    def _class_attrs(self, node: ast.ClassDef) -> tuple[set[str], dict[str, str]]:
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
                pg_params = {p.arg for p in _all_params(stmt.args)
                             if p.annotation is not None and self._is_pg_annotation(p.annotation)}
            elif isinstance(stmt, ast.AnnAssign):
                name = _self_attr(stmt.target) or (
                    stmt.target.id if isinstance(stmt.target, ast.Name) else None)
                if name and self._is_pg_annotation(stmt.annotation):
                    attrs.add(name)
            elif isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    name = _self_attr(t)
                    if name is None:
                        continue
                    v = stmt.value
                    if (isinstance(v, ast.Name) and v.id in pg_params) or self._is_pg_expr(v):
                        attrs.add(name)
                    target = self.scopes.resolve(v)
                    if target is not None and target.split(".")[0] == "torch":
                        aliases[name] = target
            stack.extend(reversed(_inner_statements(stmt)))
        return attrs, aliases


def _inner_statements(stmt: ast.stmt) -> list[ast.stmt]:
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


def _members(literal: ast.Dict | ast.List | ast.Tuple, source: Source) -> list[tuple[Any, ast.expr]]:
    """(key, value) of a dict display, (index, value) of a list or tuple display."""
    if isinstance(literal, ast.Dict):
        return [(_constant(k, source), v) for k, v in zip(literal.keys, literal.values) if k is not None]
    return [(i, e) for i, e in enumerate(literal.elts) if not isinstance(e, ast.Starred)]


def _constant(expr: ast.expr, source: Source) -> Any:
    """A key written as one string literal or an integer."""
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, (str, bytes)):
            return None if source.concatenated(expr) else expr.value
        if type(expr.value) is int:
            return expr.value
    return None


def _self_attr(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        if expr.value.id == "self":
            return expr.attr
    return None


def _all_params(params: ast.arguments) -> list[ast.arg]:
    out = [*params.posonlyargs, *params.args, *params.kwonlyargs]
    for star in (params.vararg, params.kwarg):
        if star is not None:
            out.append(star)
    return out


def _expressions(node: ast.expr):
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


def _arguments(call: ast.Call) -> list[tuple[str | None, ast.expr]]:
    """(keyword, value) of each argument in source order: None for a positional one, "*" for
    `*args` and `**kwargs` (their values are the starred expressions)."""
    out: list[tuple[str | None, ast.expr]] = [
        ("*", a.value) if isinstance(a, ast.Starred) else (None, a) for a in call.args]
    if call.keywords:
        out += [(k.arg if k.arg is not None else "*", k.value) for k in call.keywords]
        out.sort(key=lambda kv: (kv[1].lineno, kv[1].col_offset))
    return out


def _argument(call: ast.Call, params: list[str], name: str | None, offset: int = 0) -> ast.expr | None:
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


def find_sites(
    text: str, relpath: str, module: str, package: str, table: ApiTable,
    received: Routes | None = None,
) -> list[Site]:
    """All sites of one module, in source order, with stable ids. Raises SyntaxError."""
    tree = parse(text)
    return [site for site, _ in sites_with_nodes(Source(text), tree, relpath, module, package,
                                                 table, received)]


def sites_with_nodes(
    source: Source, tree: ast.Module, relpath: str, module: str, package: str, table: ApiTable,
    received: Routes | None = None,
) -> list[tuple[Site, ast.expr]]:
    """Each site with the node it was found at (the call, or the referenced name);
    `received`: what the module gets from torch through its package (`exports.routes`)."""
    finder = _Finder(source, module, relpath.endswith("__init__.py"), table, received)
    finder.visit_all(tree.body)
    pending = finder.finish()
    _fill_batch_groups(pending)
    sites: list[tuple[Site, ast.expr]] = []
    ordinals: dict[tuple[str, str], int] = {}
    for p in sorted(pending, key=lambda p: (p.node.lineno, p.node.col_offset)):
        key = (p.function, p.fields["api"])
        ordinal = ordinals.get(key, 0)
        ordinals[key] = ordinal + 1
        sites.append((_site(p, relpath, module, package, ordinal, source), p.node))
    return sites


def _site(p: _Pending, relpath: str, module: str, package: str, ordinal: int,
          source: Source) -> Site:
    fields = dict(p.fields)
    first = source.segment(p.node).strip().splitlines()[0]
    return Site(
        id=f"{package}:{module}.{p.function}:{fields['api']}:{ordinal}",
        package=package,
        path=relpath,
        line=p.node.lineno,
        end_line=p.node.end_lineno or p.node.lineno,
        function=p.function,
        module=module,
        text=first,
        **fields,
    )


def _fill_batch_groups(pending: list[_Pending]) -> None:
    """A batch takes its group from its descriptors: name it when they agree in the function."""
    groups: dict[str, set[str]] = {}
    for p in pending:
        if p.fields["issues"] == "descriptor":
            groups.setdefault(p.function, set()).add(p.fields["group"])
    for p in pending:
        if p.fields["issues"] == "batch":
            found = groups.get(p.function, set())
            p.fields["group"] = found.pop() if len(found) == 1 else "from ops"


_TABLES: dict[str | None, ApiTable] = {}


def table(version: str | None = None) -> ApiTable:
    """The API table, loaded once per process (workers included)."""
    if version not in _TABLES:
        _TABLES[version] = load_table(version)
    return _TABLES[version]
