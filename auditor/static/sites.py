"""Finds every P2P call site in one module, however the API is spelled.

Spellings covered: `torch.distributed.X`, `import torch.distributed as dist`, `from torch import
distributed`, `from torch.distributed import isend as snd`, `distributed_c10d.X`, simple aliases
(`snd = dist.isend`), `functools.partial(dist.isend, ...)`, ops passed as values
(`P2POp(dist.isend, ...)`, `ops.append(dist.irecv)`), ops in a coalescing-manager block, and
`ProcessGroup.send/recv` where the receiver is known to be a process group (annotated, or made by
a factory such as `dist.new_group`). Which names are APIs is data: `rules/torch.toml`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import libcst as cst

from auditor.sources import SourceSet
from auditor.static.analyze import Analysis, analyze
from auditor.static.apis import ApiTable, load_table
from auditor.static.names import Scopes, qualname
from auditor.static.positions import Span, locate

PARTIAL = {"functools.partial"}


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
    def __init__(self, module: cst.Module, name: str, is_package: bool, table: ApiTable) -> None:
        self.cst_module = module
        self.table = table
        self.scopes = Scopes(name, is_package)
        self.qualname: list[tuple[str, str]] = []  # (kind, name)
        self.coalescing: list[int] = [0]
        self.pg_names: list[set[str]] = [set()]
        self.pg_attrs: list[set[str]] = []
        self.consumed: set[int] = set()
        # `snd = dist.isend`: (id(frame), "snd") -> [the reference, called at least once?]
        self.aliases: dict[tuple[int, str], list[Any]] = {}
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
        self.scopes.bind(node.name.value, None)
        self.qualname.append(("class", node.name.value))
        self.scopes.push("class")
        self.pg_attrs.append(self._class_pg_attrs(node))
        node.body.visit(self)
        self.qualname.pop()
        self.scopes.pop()
        self.pg_attrs.pop()
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        for deco in node.decorators:
            deco.visit(self)
        self.scopes.bind(node.name.value, None)
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
        self.scopes.push("function")
        self.coalescing.append(0)
        pgs: set[str] = set()
        for p in _all_params(params):
            self.scopes.bind(p.name.value, None)
            if p.annotation is not None and self._is_pg_annotation(p.annotation.annotation):
                pgs.add(p.name.value)
        self.pg_names.append(pgs)

    def _leave_function(self) -> None:
        self.qualname.pop()
        self.scopes.pop()
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
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        target = node.targets[0].target.value
        entry = self.table.by_qualname.get(self.scopes.resolve(node.value) or "")
        if entry is not None:
            # An alias is reported where it is used; at the assignment only if it never is.
            pending = self._pending(node.value, entry, form="reference")
            self.consumed.add(id(node.value))
            self.aliases[(id(self.scopes.frames[-1]), target)] = [pending, False]
        elif self._is_pg_expr(node.value):
            self.pg_names[-1].add(target)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        tgt = original_node.targets[0].target if len(original_node.targets) == 1 else None
        if isinstance(tgt, cst.Name):
            # `c10d = torch.distributed.distributed_c10d` aliases; anything else shadows.
            self.scopes.bind(tgt.value, self.scopes.resolve(original_node.value))

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
        return isinstance(expr, cst.Call) and self.scopes.resolve(expr.func) in self.table.coalescing

    # --- sites ---------------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        self.seen.append(("Call", self.function_name(), node))
        self.consumed.add(id(node.func))
        qn = self.scopes.resolve(node.func)
        entry = self.table.by_qualname.get(qn or "")
        if entry is not None:
            via = self._alias_use(node.func)
            fields: dict[str, Any] = {"via": via}
            if entry["issues"] == "descriptor":
                fields["op"] = self._descriptor_op(node, entry)
            self.found.append(self._pending(node, entry, form="call", **fields))
            return
        if qn in PARTIAL and node.args:
            inner = node.args[0].value
            inner_entry = self.table.by_qualname.get(self.scopes.resolve(inner) or "")
            if inner_entry is not None:
                self.consumed.add(id(inner))
                self.found.append(self._pending(node, inner_entry, form="partial", offset=1))
            return
        if isinstance(node.func, cst.Attribute):
            method = self.table.pg_methods.get(node.func.attr.value)
            if method is not None and self._is_pg_expr(node.func.value):
                self.found.append(self._method_site(node, method))

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
        entry = self.table.by_qualname.get(self.scopes.resolve(node) or "")
        if entry is None:
            return False
        via = self._alias_use(node)
        self.found.append(self._pending(node, entry, form="reference", via=via))
        return True

    def _alias_use(self, func: cst.BaseExpression) -> str | None:
        if not isinstance(func, cst.Name):
            return None
        frame = self.scopes.frame_of(func.value)
        alias = self.aliases.get((id(frame), func.value))
        if alias is None:
            return None
        alias[1] = True
        return func.value

    def _descriptor_op(self, node: cst.Call, entry: dict[str, Any]) -> str | None:
        arg = _argument(node, entry.get("params", []), entry.get("op", "op"))
        if arg is None:
            return None
        self.consumed.add(id(arg))
        op_entry = self.table.by_qualname.get(self.scopes.resolve(arg) or "")
        if op_entry is not None:
            self._alias_use(arg)
            return op_entry["name"]
        return self._code(arg)

    def _pending(self, node: cst.CSTNode, entry: dict[str, Any], form: str, offset: int = 0,
                 **extra: Any) -> _Pending:
        """A site of `entry`; `offset` skips leading arguments (the function of a partial)."""
        issues = entry["issues"]
        batched = issues in ("descriptor", "batch", "fused") or self.coalescing[-1] > 0
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
        return _Pending(node, type(node).__name__, self.function_name(), self._rank(), fields)

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
            if self.scopes.resolve(sub) in self.table.pg_types:
                return True
            if isinstance(sub, cst.SimpleString):
                text = sub.evaluated_value
                if isinstance(text, str) and text.rsplit(".", 1)[-1] == "ProcessGroup":
                    return True
        return False

    def _is_pg_expr(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return self.scopes.resolve(expr.func) in self.table.pg_factories
        if self.scopes.resolve(expr) in self.table.pg_factories:
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

    def _class_pg_attrs(self, node: cst.ClassDef) -> set[str]:
        """Attributes of `self` that hold a process group, from any method of the class."""
        attrs: set[str] = set()
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

        node.visit(Collect())
        return attrs


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
    text: str, relpath: str, module: str, package: str, table: ApiTable
) -> list[Site]:
    """All sites of one module, in source order, with stable ids. Raises cst.ParserSyntaxError."""
    tree = cst.parse_module(text)
    return [site for site, _ in sites_with_nodes(text, tree, relpath, module, package, table)]


def sites_with_nodes(
    text: str, tree: cst.Module, relpath: str, module: str, package: str, table: ApiTable
) -> list[tuple[Site, cst.CSTNode]]:
    """Each site with the CST node it was found at (the call, or the referenced name)."""
    finder = _Finder(tree, module, relpath.endswith("__init__.py"), table)
    tree.visit(finder)
    pending = list(finder.found)
    pending += [p for p, called in finder.aliases.values() if not called]
    pending.sort(key=lambda p: p.rank)
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
    )
    sites = [Site(**d) for rel in sorted(result.results) for d in result.results[rel]["sites"]]
    return Inventory(sites, result, src)
