"""A module's code as a small IR of typed records for the call-graph interpreter, built from the
stdlib `ast` tree the site finder walked.

Only what decides which calls run is kept: bindings, calls (with arguments), branch tests (with
their source text, shown as guards), returns, attribute assignments (monkeypatches) and the P2P
sites found in the same tree. Everything else becomes an opaque value. Each node kind is a
NamedTuple, so the interpreter matches them by kind and field (`case Call(func, args, ...)`).

The IR is cached per file content like the site inventory, so the parse happens once. The cache
is JSON (data only): `encode` writes each record as its kind followed by its fields, and `decode`
reads it back into records once, when a module is loaded, each kind knowing which of its fields
are nodes (a list headed by a kind's name is never taken for a node where a name is held).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
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
    functions: Mapping[str, FunctionIR]  # by qualname; a second definition as `qualname#2`
    classes: dict[str, ClassIR]
    # (name, value) of each `NAME = value` a function makes to a name it declares `global`, by
    # the function's qualname: module bindings that may hold those values, walked or not.
    global_assignments: dict[str, list[tuple[str, Expr]]]


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
        self.global_assignments: dict[str, list[tuple[str, Expr]]] = {}
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
        assigned = _global_assignments(body_ir)
        if assigned:
            self.global_assignments[key] = assigned
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
    body = b.block(tree.body)
    return ModuleIR(module, is_package, body, b.functions, b.classes, b.global_assignments)


def _global_assignments(body: list[Stmt]) -> list[tuple[str, Expr]]:
    """(name, value) of each `NAME = value` in a function body to a name it declares `global`
    (nested blocks included; nested functions are functions of their own)."""
    declared: set[str] = set()
    assigns: list[tuple[str, Expr]] = []
    stack: list[Stmt] = list(body)
    while stack:
        match stack.pop():
            case Global(names):
                declared.update(names)
            case Assign(targets, value):
                assigns.extend((t.id, value) for t in targets if isinstance(t, Name))
            case If(_, _, then, orelse):
                stack.extend([*then, *orelse])
            case Loop(_, _, _, _, loop_body, orelse):
                stack.extend([*loop_body, *orelse])
            case With(_, with_body):
                stack.extend(with_body)
            case Try(try_body, handlers, orelse, final):
                stack.extend([*try_body, *(s for h in handlers for s in h), *orelse, *final])
    return [(name, value) for name, value in assigns if name in declared]


class _Functions(Mapping[str, FunctionIR]):
    """A module's functions, each read back from its cache form when first asked for: most
    functions of a loaded module are never called."""

    def __init__(self, data: dict[str, list]) -> None:
        self._data = data
        self._read: dict[str, FunctionIR] = {}

    def __getitem__(self, qualname: str) -> FunctionIR:
        fir = self._read.get(qualname)
        if fir is None:
            fir = self._read[qualname] = _e(self._data[qualname])
        return fir

    def __contains__(self, qualname: object) -> bool:
        return qualname in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


# --- the cache's form: each record as [kind, *fields] --------------------------------------------

_new = tuple.__new__  # a record from its fields, without NamedTuple's argument handling


def _e(d: list | None) -> Any:
    return None if d is None else _KINDS[d[0]][1](d)


def _es(d: list) -> list:
    return [_KINDS[x[0]][1](x) for x in d]


# Each kind's record and how it reads back from [kind, *fields]: the kind says which fields are
# nodes, so a name or string that spells a kind (`global call`) is never taken for one.
_KINDS: dict[str, tuple[type, Callable[[list], Any]]] = {
    "name": (Name, lambda d: _new(Name, (d[1],))),
    "attr": (Attr, lambda d: _new(Attr, (_e(d[1]), d[2]))),
    "const": (Const, lambda d: _new(Const, (d[1],))),
    "seq": (Seq, lambda d: _new(Seq, (_es(d[1]),))),
    "dict": (Dict, lambda d: _new(Dict, ([(_e(k), _e(v)) for k, v in d[1]],))),
    "call": (Call, lambda d: _new(Call, (_e(d[1]), _es(d[2]), {k: _e(v) for k, v in d[3].items()},
                                         _e(d[4]), _e(d[5]), d[6]))),
    "cmp": (Cmp, lambda d: _new(Cmp, (_e(d[1]), [(op, _e(v)) for op, v in d[2]]))),
    "bool": (Bool, lambda d: _new(Bool, (d[1], _es(d[2])))),
    "not": (Not, lambda d: _new(Not, (_e(d[1]),))),
    "ifexp": (IfExp, lambda d: _new(IfExp, (_e(d[1]), _e(d[2]), _e(d[3])))),
    "binop": (BinOp, lambda d: _new(BinOp, (d[1], _e(d[2]), _e(d[3])))),
    "sub": (Sub, lambda d: _new(Sub, (_e(d[1]), _e(d[2])))),
    "func": (FuncRef, lambda d: _new(FuncRef, (d[1],))),
    "site": (Site, lambda d: _new(Site, (d[1], _e(d[2])))),
    "opaque": (Opaque, lambda d: _new(Opaque, (_es(d[1]),))),
    "assign": (Assign, lambda d: _new(Assign, (_es(d[1]), _e(d[2])))),
    "expr": (ExprStmt, lambda d: _new(ExprStmt, (_e(d[1]),))),
    "return": (Return, lambda d: _new(Return, (_e(d[1]),))),
    "raise": (Raise, lambda d: _new(Raise, ())),
    "if": (If, lambda d: _new(If, (_e(d[1]), d[2], _es(d[3]), _es(d[4])))),
    "loop": (Loop, lambda d: _new(Loop, (_e(d[1]), d[2], _e(d[3]), _e(d[4]), _es(d[5]), _es(d[6])))),
    "with": (With, lambda d: _new(With, ([(_e(c), _e(t)) for c, t in d[1]], _es(d[2])))),
    "try": (Try, lambda d: _new(Try, (_es(d[1]), [_es(h) for h in d[2]], _es(d[3]), _es(d[4])))),
    "def": (Def, lambda d: _new(Def, (d[1], d[2]))),
    "class": (Class, lambda d: _new(Class, (d[1], d[2]))),
    "import": (Import, lambda d: _new(Import, ([tuple(b) for b in d[1]],))),
    "global": (Global, lambda d: _new(Global, (d[1],))),
    "param": (Param, lambda d: _new(Param, (d[1], _e(d[2]), d[3]))),
    "function": (FunctionIR, lambda d: _new(FunctionIR, (d[1], d[2], _es(d[3]), _es(d[4]), _es(d[5]),
                                                          d[6], d[7]))),
    "classdef": (ClassIR, lambda d: _new(ClassIR, (d[1], d[2], _es(d[3]), _es(d[4])))),
    "module": (ModuleIR, lambda d: _new(ModuleIR, (d[1], d[2], _es(d[3]), _Functions(d[4]),
                                                    {k: _e(v) for k, v in d[5].items()},
                                                    {k: [(n, _e(v)) for n, v in pairs]
                                                     for k, pairs in d[6].items()}))),
}
_KIND_OF = {cls: kind for kind, (cls, _) in _KINDS.items()}


def encode(value: Any) -> Any:
    """JSON data for a record (a ModuleIR as built), every record as [kind, *fields]."""
    t = type(value)
    kind = _KIND_OF.get(t)
    if kind is not None:
        return [kind, *[encode(v) for v in value]]
    if t is list or t is tuple:
        return [encode(v) for v in value]
    if t is dict:
        return {k: encode(v) for k, v in value.items()}
    return value  # a name, a text, a constant, a flag, None


def decode(data: list) -> ModuleIR:
    """The records back from `encode`'s data (as read from the cache)."""
    return _e(data)
