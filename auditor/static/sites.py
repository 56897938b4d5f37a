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

from dataclasses import asdict, dataclass, field
from typing import Any

import libcst as cst

from auditor.sources import SourceSet
from auditor.static.analyze import Analysis, analyze
from auditor.rulebook.apis import ApiTable, load_table
from auditor.static.exports import Routes, routes
from auditor.static.flows import ESCAPE, OP_SLOT, SINK, Flows
from auditor.static.names import Scopes, dotted, qualname
from auditor.static.positions import Span, locate

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
    """A site found in the CST, waiting for its line numbers and ordinal."""

    node: cst.CSTNode
    kind: str  # "Call" | "Attribute" | "Name": the node type `positions` pairs it with
    function: str
    rank: int  # order of discovery: CST pre-order, i.e. source order
    fields: dict[str, Any] = field(default_factory=dict)


class _Finder(cst.CSTVisitor):
    def __init__(self, module: cst.Module, name: str, is_package: bool, table: ApiTable,
                 received: Routes | None = None) -> None:
        self.cst_module = module
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
        # Every expression node visited, so `positions` can rank a site among its look-alikes.
        self.seen: list[tuple[str, str, cst.CSTNode]] = []

    # --- scopes --------------------------------------------------------------------------------

    def function_name(self) -> str:
        return qualname(self.qualname)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        for child in (*node.decorators, *node.bases, *node.keywords):
            child.visit(self)
        self._bind_definition(node.name.value)
        self.qualname.append(("class", node.name.value))
        self._push("class")
        pg_attrs, aliases = self._class_attrs(node)
        self.pg_attrs.append(pg_attrs)
        self.self_aliases.append(aliases)
        node.body.visit(self)
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

    def resolve(self, node: cst.BaseExpression) -> str | None:
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

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        for deco in node.decorators:
            deco.visit(self)
        self._bind_definition(node.name.value)
        self.qualname.append(("function", node.name.value))
        self._enter_function(node.params)
        node.body.visit(self)
        self._leave_function()
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.qualname.append(("function", "<lambda>"))
        self._enter_function(node.params)
        node.body.visit(self)
        self._leave_function()
        return False

    def _enter_function(self, params: cst.Parameters) -> None:
        self._push("function")
        self.coalescing.append(0)
        self.flows.params[self.function_name()] = [p.name.value for p in _all_params(params)]
        pgs: set[str] = set()
        for p in _all_params(params):
            self.scopes.bind(p.name.value, None)
            if p.annotation is not None and self._is_pg_annotation(p.annotation.annotation):
                pgs.add(p.name.value)
        self.pg_names.append(pgs)

    def _leave_function(self) -> None:
        self.qualname.pop()
        self._pop()
        self.coalescing.pop()
        self.pg_names.pop()

    def visit_Import(self, node: cst.Import) -> bool:
        self.scopes.bind_import(node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.scopes.bind_import(node)
        return False

    # --- bindings ------------------------------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        values = self._holders(node.value)
        for t in node.targets:
            for holder in self._stores(t.target):
                self.flows.join(holder, values)
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        target = node.targets[0].target.value
        entry = self.table.by_qualname.get(self.resolve(node.value) or "")
        if entry is not None:
            # An alias is reported where it is used; at the assignment only if it never is.
            pending = self._pending(node.value, entry, form="reference")
            self.consumed.add(id(node.value))
            key = (id(self.scopes.frames[-1]), target)
            self.aliases.setdefault(key, []).append([pending, False, entry])
        elif isinstance(node.value, (cst.Dict, cst.List, cst.Tuple)):
            self._table(target, node.value)
        elif self._is_pg_expr(node.value):
            self.pg_names[-1].add(target)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        # A name being bound is not a use of what it held (`p2p_op = dist.irecv` after
        # `p2p_op = dist.isend` is no isend site).
        return not isinstance(node.target, cst.Name)

    def _table(self, name: str, literal: cst.Dict | cst.List | cst.Tuple) -> None:
        """`OPS = {"send": dist.isend, ...}`: ops kept in a table are sites where the table is
        called (`OPS[k](...)`), and at the table only if it never is."""
        members: dict[Any, dict[str, Any]] = {}
        pendings = []
        for key, value in _members(literal):
            entry = self.table.by_qualname.get(self.resolve(value) or "")
            if entry is not None:
                members[key] = entry
                pendings.append(self._pending(value, entry, form="reference"))
                self.consumed.add(id(value))
        if members:
            self.tables[(id(self.scopes.frames[-1]), name)] = [pendings, False, members]

    def _table_calls(self, node: cst.Call) -> list[dict[str, Any]]:
        """The APIs a call through a table can be: the member its constant key names, else any."""
        func = node.func
        if not (isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name)):
            return []
        table = self.tables.get((id(self.scopes.frame_of(func.value.value)), func.value.value))
        if table is None:
            return []
        table[1] = True
        key = _constant(func.slice[0].slice.value) if len(func.slice) == 1 and \
            isinstance(func.slice[0].slice, cst.Index) else None
        if key in table[2]:
            return [table[2][key]]
        return list({e["name"]: e for e in table[2].values()}.values())

    def leave_Assign(self, original_node: cst.Assign) -> None:
        tgt = original_node.targets[0].target if len(original_node.targets) == 1 else None
        if isinstance(tgt, cst.Name):
            # `c10d = torch.distributed.distributed_c10d` aliases; anything else shadows.
            self.scopes.bind(tgt.value, self.resolve(original_node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        values = self._holders(node.value)
        for holder in self._stores(node.target):
            self.flows.join(holder, values)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.flows.join(("ret", self.function_name()), self._holders(node.value))

    def visit_Yield(self, node: cst.Yield) -> None:
        if isinstance(node.value, cst.BaseExpression):
            self.flows.join(("ret", self.function_name()), self._holders(node.value))

    def visit_For(self, node: cst.For) -> None:
        values = self._holders(node.iter)
        for holder in self._stores(node.target):
            self.flows.join(holder, values)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.comparing += 1  # `op_types == {dist.isend}` names ops, it issues none

    def leave_Comparison(self, original_node: cst.Comparison) -> None:
        self.comparing -= 1

    # --- data flow (flows.py) ------------------------------------------------------------------

    def _holders(self, expr: cst.BaseExpression) -> list[Any]:
        """Where the values of `expr` live, as flows.py holders."""
        if isinstance(expr, cst.Name):
            if self.table.by_qualname.get(self.resolve(expr) or "") is None:
                return [self._var(expr.value)]
            if (id(self.scopes.frame_of(expr.value)), expr.value) in self.aliases:
                return [self._var(expr.value), ("ref", id(expr))]  # `snd` of `snd = dist.isend`
            return [("ref", id(expr))]
        if isinstance(expr, cst.Attribute):
            if self.table.by_qualname.get(self.resolve(expr) or "") is not None:
                return [("ref", id(expr))]
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return [("attr", self._class_name(), expr.attr.value)]
            return []
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return [h for e in expr.elements for h in self._holders(e.value)]
        if isinstance(expr, cst.Dict):
            return [h for e in expr.elements if isinstance(e, cst.DictElement)
                    for h in self._holders(e.value)]
        if isinstance(expr, cst.IfExp):
            return self._holders(expr.body) + self._holders(expr.orelse)
        if isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
            return self._holders(expr.left) + self._holders(expr.right)
        if isinstance(expr, cst.Subscript):
            return self._holders(expr.value)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return self._holders(expr.elt) + self._holders(expr.for_in.iter)
        if isinstance(expr, cst.Call):
            entry = self.table.by_qualname.get(self.resolve(expr.func) or "")
            if entry is not None and entry["issues"] == "descriptor":
                return [("obj", id(expr))]
            callee = self._own_function(expr.func)
            if callee is not None:
                return [("ret", callee[0])]
            if isinstance(expr.func, cst.Name) and expr.func.value in PASS_THROUGH and expr.args:
                return self._holders(expr.args[0].value)
        return []

    def _stores(self, target: cst.BaseExpression) -> list[Any]:
        """Holders an assignment target stores into: a plain name is local to the scope."""
        if isinstance(target, cst.Name):
            frame = self.scopes.frame_of(target.value)
            if frame is None or frame is self.scopes.frames[-1]:
                return [("var", self.frame_names[-1], target.value)]
        if isinstance(target, (cst.Tuple, cst.List)):
            return [h for e in target.elements for h in self._stores(e.value)]
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

    def _own_function(self, func: cst.BaseExpression) -> tuple[str, int] | None:
        """(qualname, parameters to skip) of a function of this module that `func` calls."""
        if isinstance(func, cst.Name):
            if self.resolve(func) == f"{self.module}.{func.value}":
                return func.value, 0
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                func.value.value == "self" and self.self_aliases:
            return f"{self._class_name()}.{func.attr.value}", 1
        return None

    def _flow_call(self, node: cst.Call, entry: dict[str, Any] | None) -> None:
        """What a call stores, passes on, or batches."""
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in STORES and node.args:
            values = self._holders(node.args[-1].value)
            stores = self._holders(node.func.value)
            for holder in stores:
                self.flows.join(holder, values)
            if not stores:  # `self.queue.ops.append(op)`: kept where this module cannot follow
                self.flows.mark(ESCAPE, values)
        callee = self._own_function(node.func)
        builtin = node.func.value if isinstance(node.func, cst.Name) and \
            self.scopes.frame_of(node.func.value) is None else None
        if callee is None and entry is None and builtin not in INSPECT | PASS_THROUGH and not (
                isinstance(node.func, cst.Attribute) and node.func.attr.value in STORES):
            for arg in node.args:  # another module's function may batch what it is given
                self.flows.mark(ESCAPE, self._holders(arg.value))
        if callee is not None:
            name, skip = callee
            position = skip
            for arg in node.args:
                if arg.star:
                    continue
                if arg.keyword is not None:
                    self.flows.argument(name, arg.keyword.value, self._holders(arg.value))
                else:
                    self.flows.argument(name, position, self._holders(arg.value))
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

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and self._is_pg_annotation(node.annotation.annotation):
            self.pg_names[-1].add(node.target.value)

    # --- coalescing blocks ---------------------------------------------------------------------

    def visit_With(self, node: cst.With) -> None:
        if any(self._is_coalescing(item.item) for item in node.items):
            self.coalescing[-1] += 1

    def leave_With(self, original_node: cst.With) -> None:
        if any(self._is_coalescing(item.item) for item in original_node.items):
            self.coalescing[-1] -= 1

    def _is_coalescing(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self.resolve(expr.func) in self.table.coalescing

    # --- sites ---------------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        self.seen.append(("Call", self.function_name(), node))
        self.consumed.add(id(node.func))
        qn = self.resolve(node.func)
        entry = self.table.by_qualname.get(qn or "")
        self._flow_call(node, entry)
        if isinstance(node.func, cst.Name) and node.func.value in TYPE_TESTS and \
                self.scopes.frame_of(node.func.value) is None:
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
        if qn in PARTIAL and node.args:
            inner = node.args[0].value
            inner_entry = self.table.by_qualname.get(self.resolve(inner) or "")
            if inner_entry is not None:
                self.consumed.add(id(inner))
                self.found.append(self._pending(node, inner_entry, form="partial", offset=1))
            return
        if isinstance(node.func, cst.Attribute):
            method = self.table.pg_methods.get(node.func.attr.value)
            if method is not None and self._is_pg_expr(node.func.value):
                self.found.append(self._method_site(node, method))

    def leave_Call(self, original_node: cst.Call) -> None:
        if id(original_node) in self.type_tests:
            self.comparing -= 1

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # `attr` is a Name in the CST but not an expression: only the value is visited, unless
        # the node is itself a site (then its value is just the module, `dist` in `dist.irecv`).
        if id(node) in self.consumed or not self._reference(node):
            if id(node) in self.consumed:
                self.seen.append(("Attribute", self.function_name(), node))
            node.value.visit(self)  # `dist.irecv(...).wait()`: the call inside is a site
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self._reference(node)

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        return False  # `ops: list[dist.P2POp]` names a type, it issues nothing

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # not the keyword's Name
        return False

    def _reference(self, node: cst.Name | cst.Attribute) -> bool:
        """Records a reference site; True when the node was one (or is consumed by one)."""
        self.seen.append((type(node).__name__, self.function_name(), node))
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

    def _alias_use(self, func: cst.BaseExpression) -> str | None:
        if not isinstance(func, cst.Name):
            return None
        frame = self.scopes.frame_of(func.value)
        alias = self.aliases.get((id(frame), func.value))
        if alias is None:
            return None
        for assignment in alias:
            assignment[1] = True
        return func.value

    def _alias_entries(self, func: cst.BaseExpression, entry: dict[str, Any]) -> list[dict[str, Any]]:
        """Every API an alias was assigned (each assignment's own), else `entry`."""
        if isinstance(func, cst.Name):
            alias = self.aliases.get((id(self.scopes.frame_of(func.value)), func.value))
            if alias:
                return list({e["name"]: e for _, _, e in alias}.values())
        return [entry]

    def _descriptor_op(self, node: cst.Call, entry: dict[str, Any]) -> str | None:
        arg = _argument(node, entry.get("params", []), entry.get("op", "op"))
        if arg is None:
            return None
        self.consumed.add(id(arg))
        op_entry = self.table.by_qualname.get(self.resolve(arg) or "")
        if op_entry is not None:
            self._alias_use(arg)
            return op_entry["name"]
        return self._code(arg)

    def _pending(self, node: cst.CSTNode, entry: dict[str, Any], form: str, offset: int = 0,
                 **extra: Any) -> _Pending:
        """A site of `entry`; `offset` skips leading arguments (the function of a partial)."""
        issues = entry["issues"]
        # A descriptor's own flag is decided once the module's flows are known (`_finish`).
        batched = issues in ("batch", "fused") or self.coalescing[-1] > 0
        group: str | None = "unknown"  # a reference: the group is chosen where it is called
        peer = None
        if isinstance(node, cst.Call):
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
        pending = _Pending(node, type(node).__name__, self.function_name(), self._rank(), fields)
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

    def _method_site(self, node: cst.Call, method: dict[str, Any]) -> _Pending:
        fields = {
            "api": method["name"],
            "batched": self.coalescing[-1] > 0,
            "group": self._code(node.func.value),  # type: ignore[attr-defined]
            "peer": self._code(node.args[1].value) if len(node.args) > 1 else None,
            "form": "method",
            "issues": method["issues"],
        }
        return _Pending(node, "Call", self.function_name(), self._rank(), fields)

    def _rank(self) -> int:
        self.ranks += 1
        return self.ranks

    def _code(self, node: cst.CSTNode) -> str:
        return self.cst_module.code_for_node(node).strip()

    def _arg_text(self, call: cst.Call, params: list[str], name: str | None, offset: int) -> str | None:
        arg = _argument(call, params, name, offset)
        return self._code(arg) if arg is not None else None

    # --- process groups ------------------------------------------------------------------------

    def _is_pg_annotation(self, ann: cst.BaseExpression) -> bool:
        for sub in _expressions(ann):
            if self.resolve(sub) in self.table.pg_types:
                return True
            if isinstance(sub, cst.SimpleString):
                text = sub.evaluated_value
                if isinstance(text, str) and text.rsplit(".", 1)[-1] == "ProcessGroup":
                    return True
        return False

    def _is_pg_expr(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return self.resolve(expr.func) in self.table.pg_factories
        if self.resolve(expr) in self.table.pg_factories:
            return True
        if isinstance(expr, cst.Name):
            return any(expr.value in names for names in self.pg_names)
        if (
            isinstance(expr, cst.Attribute)
            and isinstance(expr.value, cst.Name)
            and expr.value.value == "self"
            and self.pg_attrs
        ):
            return expr.attr.value in self.pg_attrs[-1]
        return False

    def _class_attrs(self, node: cst.ClassDef) -> tuple[set[str], dict[str, str]]:
        """Attributes of `self` that hold a process group, and those set to torch (a module or
        an API: `self.d = torch.distributed`), from any method of the class."""
        attrs: set[str] = set()
        aliases: dict[str, str] = {}
        finder = self

        class Collect(cst.CSTVisitor):
            def __init__(self) -> None:
                self.pg_params: set[str] = set()

            def visit_ClassDef(self, inner: cst.ClassDef) -> bool:
                return inner is node

            def visit_FunctionDef(self, fn: cst.FunctionDef) -> None:
                self.pg_params = {
                    p.name.value
                    for p in _all_params(fn.params)
                    if p.annotation is not None
                    and finder._is_pg_annotation(p.annotation.annotation)
                }

            def visit_AnnAssign(self, a: cst.AnnAssign) -> None:
                name = _self_attr(a.target) or (
                    a.target.value if isinstance(a.target, cst.Name) else None
                )
                if name and finder._is_pg_annotation(a.annotation.annotation):
                    attrs.add(name)

            def visit_Assign(self, a: cst.Assign) -> None:
                for t in a.targets:
                    name = _self_attr(t.target)
                    if name is None:
                        continue
                    v = a.value
                    if (isinstance(v, cst.Name) and v.value in self.pg_params) or (
                        finder._is_pg_expr(v)
                    ):
                        attrs.add(name)
                    target = finder.scopes.resolve(v)
                    if target is not None and target.split(".")[0] == "torch":
                        aliases[name] = target

        node.visit(Collect())
        return attrs, aliases


def _members(literal: cst.Dict | cst.List | cst.Tuple) -> list[tuple[Any, cst.BaseExpression]]:
    """(key, value) of a dict display, (index, value) of a list or tuple display."""
    if isinstance(literal, cst.Dict):
        return [(_constant(e.key), e.value) for e in literal.elements if isinstance(e, cst.DictElement)]
    return [(i, e.value) for i, e in enumerate(literal.elements) if isinstance(e, cst.Element)]


def _constant(expr: cst.BaseExpression) -> Any:
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    return None


def _self_attr(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        if expr.value.value == "self":
            return expr.attr.value
    return None


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


def _expressions(node: cst.CSTNode):
    """The node and every Name/Attribute/String inside it (for annotations like Optional[X])."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, (cst.Name, cst.Attribute, cst.SimpleString)):
            yield cur
            if isinstance(cur, cst.Attribute):
                continue
        stack.extend(cur.children)


def _argument(
    call: cst.Call, params: list[str], name: str | None, offset: int = 0
) -> cst.BaseExpression | None:
    """The argument bound to parameter `name`, by keyword or by position."""
    if name is None:
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    if name in params:
        index = params.index(name) + offset
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if index < len(positional):
            return positional[index].value
    return None


def find_sites(
    text: str, relpath: str, module: str, package: str, table: ApiTable,
    received: Routes | None = None,
) -> list[Site]:
    """All sites of one module, in source order, with stable ids. Raises cst.ParserSyntaxError."""
    tree = cst.parse_module(text)
    return [site for site, _ in sites_with_nodes(text, tree, relpath, module, package, table, received)]


def sites_with_nodes(
    text: str, tree: cst.Module, relpath: str, module: str, package: str, table: ApiTable,
    received: Routes | None = None,
) -> list[tuple[Site, cst.CSTNode]]:
    """Each site with the CST node it was found at (the call, or the referenced name);
    `received`: what the module gets from torch through its package (`exports.routes`)."""
    finder = _Finder(tree, module, relpath.endswith("__init__.py"), table, received)
    tree.visit(finder)
    pending = finder.finish()
    spans = locate(text, tree, [(p.kind, p.function, p.node) for p in pending], finder.seen)
    _fill_batch_groups(pending)
    sites: list[tuple[Site, cst.CSTNode]] = []
    ordinals: dict[tuple[str, str], int] = {}
    for p, span in sorted(zip(pending, spans), key=lambda ps: (ps[1].line, ps[1].col)):
        key = (p.function, p.fields["api"])
        ordinal = ordinals.get(key, 0)
        ordinals[key] = ordinal + 1
        sites.append((_site(p, span, relpath, module, package, ordinal, tree), p.node))
    return sites


def _site(p: _Pending, span: Span, relpath: str, module: str, package: str, ordinal: int,
          tree: cst.Module) -> Site:
    fields = dict(p.fields)
    first = tree.code_for_node(p.node).strip().splitlines()[0]
    return Site(
        id=f"{package}:{module}.{p.function}:{fields['api']}:{ordinal}",
        package=package,
        path=relpath,
        line=span.line,
        end_line=span.end_line,
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


# --- over a whole source tree ------------------------------------------------------------------

_TABLES: dict[str | None, ApiTable] = {}


def table(version: str | None = None) -> ApiTable:
    """The API table, loaded once per process (workers included)."""
    if version not in _TABLES:
        _TABLES[version] = load_table(version)
    return _TABLES[version]


@dataclass
class Inventory:
    sites: list[Site]
    analysis: Analysis
    source: SourceSet


def inventory(src: SourceSet, jobs: int | None = None, progress: bool = False) -> Inventory:
    """Every site in one target. Files that cannot hold one are skipped unparsed; the others are
    parsed once, for their sites and the IR the call graph reads later."""
    from auditor.static import parsed  # parsed imports this module

    result = analyze(
        src,
        parsed.module_task,
        parsed.task_key(),
        wanted=table().may_hold_site,
        jobs=jobs,
        progress=progress,
        context=routes,
    )
    sites = [Site(**d) for rel in sorted(result.results) for d in result.results[rel]["sites"]]
    return Inventory(sites, result, src)
