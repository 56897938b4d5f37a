"""A module's code as a small IR of typed records for the call-graph interpreter, built from the
stdlib `ast` tree the site finder walked.

Only what decides which calls run is kept: bindings, calls (with arguments), branch tests (with
their source text, shown as guards), returns, attribute assignments (monkeypatches) and the P2P
sites found in the same tree. Everything else becomes an opaque value. Each node kind is a
NamedTuple, so the interpreter matches them by kind and field (`case Call(func, args, ...)`).

The IR is cached per file content like the site inventory, so the parse happens once. The cache
is JSON (data only): `encode` writes each record as its kind followed by its fields, and `decode`
reads it back into records once, when a module is loaded, guided by each kind's field types (a
list headed by a kind's name is not taken for a node where the kind says a name is held).
"""

from __future__ import annotations

import ast
from typing import Any, NamedTuple, Union

from auditor.static.names import dotted, import_bindings, qualname
from auditor.static.source import Source

# --- expressions -------------------------------------------------------------------------------


class Name(NamedTuple):
    id: str


class Attr(NamedTuple):
    base: Expr
    attr: str


class Const(NamedTuple):
    value: None | bool | int | float | str


class Seq(NamedTuple):
    items: list[Expr]


class Dict(NamedTuple):
    items: list[tuple[Expr | None, Expr]]  # (key, value); key None: `**other`


class Call(NamedTuple):
    func: Expr
    args: list[Expr]
    kwargs: dict[str, Expr]
    star: Expr | None  # the `*args` expression
    dstar: Expr | None  # the `**kwargs` expression
    text: str  # the callee as written


class Cmp(NamedTuple):
    left: Expr
    ops: list[tuple[str, Expr]]  # (operator, right operand), chained


class Bool(NamedTuple):
    op: str  # "and" | "or"
    values: list[Expr]


class Not(NamedTuple):
    operand: Expr


class IfExp(NamedTuple):
    test: Expr
    body: Expr
    orelse: Expr


class BinOp(NamedTuple):
    op: str
    left: Expr
    right: Expr


class Sub(NamedTuple):
    base: Expr
    index: Expr | None  # None: a slice or several indices


class FuncRef(NamedTuple):
    """A lambda, stored as a function of the module under this qualname."""

    qualname: str


class Site(NamedTuple):
    """An expression at which the site finder found a P2P site."""

    site: str
    expr: Expr


class Opaque(NamedTuple):
    parts: list[Expr]  # subexpressions evaluated for their calls


Expr = Union[Name, Attr, Const, Seq, Dict, Call, Cmp, Bool, Not, IfExp, BinOp, Sub, FuncRef, Site,
             Opaque]

# --- statements --------------------------------------------------------------------------------


class Assign(NamedTuple):
    targets: list[Expr]
    value: Expr


class ExprStmt(NamedTuple):
    value: Expr


class Return(NamedTuple):
    value: Expr | None


class Raise(NamedTuple):
    pass


class If(NamedTuple):
    test: Expr
    text: str  # the test as written, shown as a guard
    body: list[Stmt]
    orelse: list[Stmt]


class Loop(NamedTuple):
    test: Expr | None  # a while loop's test; None for a for loop
    text: str
    target: Expr | None  # a for loop's target and iterable
    iter: Expr | None
    body: list[Stmt]
    orelse: list[Stmt]


class With(NamedTuple):
    items: list[tuple[Expr, Expr | None]]  # (context expression, target)
    body: list[Stmt]


class Try(NamedTuple):
    """A try statement; a `match` is one too (its cases are the handlers)."""

    body: list[Stmt]
    handlers: list[list[Stmt]]
    orelse: list[Stmt]
    final: list[Stmt]


class Def(NamedTuple):
    name: str
    qualname: str  # the key of the function in ModuleIR.functions


class Class(NamedTuple):
    name: str
    qualname: str


class Import(NamedTuple):
    bindings: list[tuple[str, str, bool]]  # (local name, target, is a module)


class Global(NamedTuple):
    names: list[str]


Stmt = Union[Assign, ExprStmt, Return, Raise, If, Loop, With, Try, Def, Class, Import, Global]

# --- definitions -------------------------------------------------------------------------------


class Param(NamedTuple):
    name: str
    default: Expr | None
    kind: str  # "pos" | "star" | "kwonly" | "dstar"


class FunctionIR(NamedTuple):
    qualname: str
    name: str
    params: list[Param]
    body: list[Stmt]
    decorators: list[Expr]
    method: bool
    nested: bool


class ClassIR(NamedTuple):
    qualname: str
    name: str
    bases: list[Expr]
    body: list[Stmt]


class ModuleIR(NamedTuple):
    module: str
    package: bool
    body: list[Stmt]
    functions: dict[str, FunctionIR]  # by qualname; a second definition as `qualname#2`
    classes: dict[str, ClassIR]


_CMP = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}
# Operators by the names the IR has always used (libcst's), so that the IR keeps its shape.
_BINOP = {
    ast.Add: "Add", ast.Sub: "Subtract", ast.Mult: "Multiply", ast.Div: "Divide",
    ast.FloorDiv: "FloorDivide", ast.Mod: "Modulo", ast.Pow: "Power", ast.LShift: "LeftShift",
    ast.RShift: "RightShift", ast.BitOr: "BitOr", ast.BitAnd: "BitAnd", ast.BitXor: "BitXor",
    ast.MatMult: "MatrixMultiply",
}
_TEXT_LIMIT = 160
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Builder:
    def __init__(self, source: Source, module: str, is_package: bool, site_ids: dict[int, str]):
        self.source = source
        self.module = module
        self.is_package = is_package
        self.site_ids = site_ids
        self.functions: dict[str, FunctionIR] = {}
        self.classes: dict[str, ClassIR] = {}
        self.scope: list[tuple[str, str]] = []  # (kind, name) for qualnames

    # --- naming --------------------------------------------------------------------------------

    def qualname(self, name: str) -> str:
        return qualname([*self.scope, ("", name)])

    def text(self, node: ast.AST, after: int | None = None) -> str:
        """The code of a node in one line, shortened; with `after`, with the parentheses around
        it (`Source.grouped`)."""
        code = self.source.segment(node) if after is None else self.source.grouped(node, after)
        code = " ".join(code.split())
        return code if len(code) <= _TEXT_LIMIT else code[: _TEXT_LIMIT - 3] + "..."

    # --- statements ----------------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, node: ast.stmt) -> list[Stmt]:
        start = self.source.offsets(node)[0]
        if isinstance(node, ast.If):
            orelse = self.block(node.orelse)  # first: a def in both branches is `#2` in the body
            return [If(self.expr(node.test), self.text(node.test, start), self.block(node.body), orelse)]
        if isinstance(node, (ast.For, ast.AsyncFor)):
            target_end = self.source.offsets(node.target)[1]
            return [Loop(None, "for " + self.text(node.target, start) + " in " +
                         self.text(node.iter, target_end), self.target(node.target),
                         self.expr(node.iter), self.block(node.body), self.block(node.orelse))]
        if isinstance(node, ast.While):
            return [Loop(self.expr(node.test), "while " + self.text(node.test, start), None, None,
                         self.block(node.body), self.block(node.orelse))]
        if isinstance(node, (ast.With, ast.AsyncWith)):
            items = [(self.expr(i.context_expr),
                      self.target(i.optional_vars) if i.optional_vars is not None else None)
                     for i in node.items]
            return [With(items, self.block(node.body))]
        if isinstance(node, (ast.Try, ast.TryStar)):
            handlers = [self.block(h.body) for h in node.handlers]
            return [Try(self.block(node.body), handlers, self.block(node.orelse),
                        self.block(node.finalbody))]
        if isinstance(node, _FUNCTIONS):
            qn = self.function(node.name, node.args, node.body, node.decorator_list)
            return [Def(node.name, qn)]
        if isinstance(node, ast.ClassDef):
            return [Class(node.name, self.klass(node))]
        if isinstance(node, ast.Match):
            cases = [self.block(c.body) for c in node.cases]
            return [Try([ExprStmt(self.expr(node.subject))], cases, [], [])]
        if isinstance(node, ast.Assign):
            return [Assign([self.target(t) for t in node.targets], self.expr(node.value))]
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                return []
            return [Assign([self.target(node.target)], self.expr(node.value))]
        if isinstance(node, ast.AugAssign):
            value = Opaque([self.expr(node.target), self.expr(node.value)])
            return [Assign([self.target(node.target)], value)]
        if isinstance(node, ast.Expr):
            return [ExprStmt(self.expr(node.value))]
        if isinstance(node, ast.Return):
            return [Return(self.expr(node.value) if node.value is not None else None)]
        if isinstance(node, ast.Raise):
            return [Raise()]
        if isinstance(node, ast.Assert):
            return [ExprStmt(self.expr(node.test))]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bindings = import_bindings(node, self.module, self.is_package)
            return [Import(bindings)] if bindings else []
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return [Global(list(node.names))]
        return []

    def target(self, node: ast.expr) -> Expr:
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return self.expr(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            return Seq([self.target(e) for e in node.elts])
        if isinstance(node, ast.Starred):
            return self.target(node.value)
        return Opaque([])

    # --- definitions ---------------------------------------------------------------------------

    def function(self, name: str, params: ast.arguments, body: list[ast.stmt] | ast.expr,
                 decorators: list[ast.expr] = ()) -> str:  # type: ignore[assignment]
        qn = self.qualname(name)
        plist: list[Param] = []
        positional = [*params.posonlyargs, *params.args]
        defaults = [None] * (len(positional) - len(params.defaults)) + list(params.defaults)
        for p, default in zip(positional, defaults):
            plist.append(Param(p.arg, self.expr(default) if default is not None else None, "pos"))
        if params.vararg is not None:
            plist.append(Param(params.vararg.arg, None, "star"))
        for p, default in zip(params.kwonlyargs, params.kw_defaults):
            plist.append(Param(p.arg, self.expr(default) if default is not None else None, "kwonly"))
        if params.kwarg is not None:
            plist.append(Param(params.kwarg.arg, None, "dstar"))
        decos = [self.expr(d) for d in decorators]
        in_class = bool(self.scope) and self.scope[-1][0] == "class"
        self.scope.append(("function", name))
        if isinstance(body, ast.expr):
            body_ir: list[Stmt] = [Return(self.expr(body))]
        else:
            body_ir = self.block(body)
        self.scope.pop()
        # A name defined twice (`if X: def send(): ... else: def send(): ...`, two lambdas in
        # one scope) keeps both bodies: the second is stored under `qualname#2`.
        key = qn
        n = 1
        while key in self.functions:
            n += 1
            key = f"{qn}#{n}"
        self.functions[key] = FunctionIR(qn, name, plist, body_ir, decos, in_class,
                                         any(k == "function" for k, _ in self.scope))
        return key

    def klass(self, node: ast.ClassDef) -> str:
        qn = self.qualname(node.name)
        bases = [self.expr(b.value if isinstance(b, ast.Starred) else b) for b in node.bases]
        self.scope.append(("class", node.name))
        body = self.block(node.body)
        self.scope.pop()
        self.classes[qn] = ClassIR(qn, node.name, bases, body)
        return qn

    # --- expressions ---------------------------------------------------------------------------

    def expr(self, node: ast.expr | None) -> Expr:
        out = self._expr(node)
        site = self.site_ids.get(id(node)) if node is not None else None
        return Site(site, out) if site is not None else out

    def _expr(self, node: ast.expr | None) -> Expr:
        if node is None:
            return Const(None)
        if isinstance(node, ast.Name):
            return Name(node.id)
        if isinstance(node, ast.Attribute):
            return Attr(self.expr(node.value), node.attr)
        if isinstance(node, ast.Call):
            args: list[Expr] = []
            kwargs: dict[str, Expr] = {}
            star = dstar = None
            for a in node.args:
                if isinstance(a, ast.Starred):
                    star = self.expr(a.value)
                else:
                    args.append(self.expr(a))
            for k in node.keywords:
                if k.arg is None:
                    dstar = self.expr(k.value)
                else:
                    kwargs[k.arg] = self.expr(k.value)
            return Call(self.expr(node.func), args, kwargs, star, dstar,
                        dotted(node.func) or self.text(node.func))
        if isinstance(node, ast.Constant):
            value = node.value
            if value is None or isinstance(value, (bool, int, float)) or \
                    (isinstance(value, str) and not self.source.concatenated(node)):
                return Const(value)
            return Opaque([])  # bytes, complex, `...`, implicitly concatenated strings
        if isinstance(node, ast.Compare):
            return Cmp(self.expr(node.left),
                       [(_CMP.get(type(op), "?"), self.expr(c)) for op, c in zip(node.ops, node.comparators)])
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            values: list[Expr] = []
            for side in node.values:
                e = self.expr(side)
                values.extend(e.values if isinstance(e, Bool) and e.op == op else [e])
            return Bool(op, values)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return Not(self.expr(node.operand))
            return BinOp("neg", Const(0), self.expr(node.operand))
        if isinstance(node, ast.BinOp):
            return BinOp(_BINOP[type(node.op)], self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.IfExp):
            return IfExp(self.expr(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, ast.Subscript):
            index = self.source.index(node)
            return Sub(self.expr(node.value), self.expr(index) if index is not None else None)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return Seq([self.expr(e.value if isinstance(e, ast.Starred) else e) for e in node.elts])
        if isinstance(node, ast.Dict):
            return Dict([(self.expr(k) if k is not None else None, self.expr(v))
                         for k, v in zip(node.keys, node.values)])
        if isinstance(node, ast.Lambda):
            return FuncRef(self.function("<lambda>", node.args, node.body))
        if isinstance(node, ast.NamedExpr):
            return Opaque([self.expr(node.value)])
        if isinstance(node, ast.Await):
            return self.expr(node.value)
        # Comprehensions, f-strings, yields...: opaque, but calls inside them still run.
        return Opaque([self.expr(c) for c in _call_children(node)])


def _call_children(node: ast.AST) -> list[ast.expr]:
    """The outermost calls and site references inside an opaque expression, last first."""
    found: list[ast.expr] = []
    stack = _children(node)
    while stack:
        cur = stack.pop()
        if isinstance(cur, (ast.Call, ast.Attribute)):
            found.append(cur)
            continue
        if isinstance(cur, ast.Lambda):
            continue
        stack.extend(_children(cur))
    return found


def _children(node: ast.AST) -> list[ast.AST]:
    """Child nodes in source order (ast lists a conditional's test first, a dict's keys apart)."""
    if isinstance(node, ast.IfExp):
        return [node.body, node.test, node.orelse]
    if isinstance(node, ast.Dict):
        return [n for k, v in zip(node.keys, node.values) for n in (k, v) if n is not None]
    return list(ast.iter_child_nodes(node))


def build(tree: ast.Module, source: Source, module: str, is_package: bool,
          site_ids: dict[int, str]) -> ModuleIR:
    """The IR of one module: its top-level body, and every function and class in it by qualname.
    `site_ids`: the site found at each node (by `id`) of the same tree."""
    b = _Builder(source, module, is_package, site_ids)
    return ModuleIR(module, is_package, b.block(tree.body), b.functions, b.classes)


# --- the cache's form: each record as [kind, *fields] --------------------------------------------

# Each kind's record and the type of each of its fields, in order: v a plain value (a string, a
# flag, a constant), e a node or None, E a list of nodes, H a list of lists of nodes, K a mapping
# from names to nodes, P a list of pairs whose second item is a node (`Cmp.ops`), D a list of
# pairs of nodes or None (`Dict.items`, `With.items`), T a list of tuples of plain values.
_KINDS: dict[str, tuple[type, str]] = {
    "name": (Name, "v"), "attr": (Attr, "ev"), "const": (Const, "v"), "seq": (Seq, "E"),
    "dict": (Dict, "D"), "call": (Call, "eEKeev"), "cmp": (Cmp, "eP"), "bool": (Bool, "vE"),
    "not": (Not, "e"), "ifexp": (IfExp, "eee"), "binop": (BinOp, "vee"), "sub": (Sub, "ee"),
    "func": (FuncRef, "v"), "site": (Site, "ve"), "opaque": (Opaque, "E"),
    "assign": (Assign, "Ee"), "expr": (ExprStmt, "e"), "return": (Return, "e"), "raise": (Raise, ""),
    "if": (If, "evEE"), "loop": (Loop, "eveeEE"), "with": (With, "DE"), "try": (Try, "EHEE"),
    "def": (Def, "vv"), "class": (Class, "vv"), "import": (Import, "T"), "global": (Global, "v"),
    "param": (Param, "vev"), "function": (FunctionIR, "vvEEEvv"), "classdef": (ClassIR, "vvEE"),
    "module": (ModuleIR, "vvEKK"),
}
_KIND_OF = {cls: kind for kind, (cls, _) in _KINDS.items()}


def encode(value: Any) -> Any:
    """JSON data for a record (a ModuleIR as built), every record as [kind, *fields]."""
    if isinstance(value, tuple):
        kind = _KIND_OF.get(type(value))
        items = [encode(v) for v in value]
        return [kind, *items] if kind is not None else items
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def decode(data: list) -> ModuleIR:
    """The records back from `encode`'s data (as read from the cache)."""
    return _node(data)


def _node(data: list | None) -> Any:
    if data is None:
        return None
    cls, fields = _KINDS[data[0]]
    return cls(*[_FIELD[t](v) for t, v in zip(fields, data[1:])])


def _nodes(data: list) -> list:
    return [_node(v) for v in data]


_FIELD = {
    "v": lambda v: v,
    "e": _node,
    "E": _nodes,
    "H": lambda v: [_nodes(block) for block in v],
    "K": lambda v: {k: _node(x) for k, x in v.items()},
    "P": lambda v: [(op, _node(x)) for op, x in v],
    "D": lambda v: [(_node(a), _node(b)) for a, b in v],
    "T": lambda v: [tuple(t) for t in v],
}
