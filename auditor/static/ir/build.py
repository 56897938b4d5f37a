"""The IR (`ir.py`) of one module, built from the stdlib `ast` tree the site finder walked: the
same parse gives both, and the sites found in it mark the expressions they are at."""

from __future__ import annotations

import ast

from auditor.static.ir.ir import (
    Assign, Attr, BinOp, Bool, Call, Class, ClassIR, Cmp, Comp, Const, Def, Dict, Expr, ExprStmt,
    FuncRef, FunctionIR, Global, If, IfExp, Import, Loop, ModuleIR, Name, Not, Opaque, Param,
    Raise, Return, Seq, SiteExpr, StarImport, Stmt, Sub, Try, With,
)
from auditor.static.names import dotted, import_bindings, import_target, qualname
from auditor.static.source import Source

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
_COMP = {ast.ListComp: "list", ast.SetComp: "set", ast.GeneratorExp: "gen"}
_TEXT_LIMIT = 160
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TRY = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)  # try/except* from 3.11


class _IRBuilder:
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

    def text(self, node: ast.expr, after: int | None = None) -> str:
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
        if isinstance(node, _TRY):
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
        if isinstance(node, ast.ImportFrom) and node.names[0].name == "*":
            base = import_target(self.module, self.is_package, node)
            return [StarImport(base)] if base is not None else []
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bindings = import_bindings(node, self.module, self.is_package)
            return [Import(bindings)] if bindings else []
        if isinstance(node, ast.Global):  # `nonlocal` names the enclosing function's variable
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
        # `metaclass=M` (or any class keyword) as an opaque base: the class may answer
        # isinstance itself, so `typetests` leaves tests against it undecided.
        bases += [Opaque([self.expr(k.value)]) for k in node.keywords]
        self.scope.append(("class", node.name))
        body = self.block(node.body)
        self.scope.pop()
        self.classes[qn] = ClassIR(qn, node.name, bases, body)
        return qn

    # --- expressions ---------------------------------------------------------------------------

    def expr(self, node: ast.expr | None) -> Expr:
        out = self._expr(node)
        site = self.site_ids.get(id(node)) if node is not None else None
        return SiteExpr(site, out) if site is not None else out

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
            # `*x` in a display: the items of x (a subscript with no index reads them).
            return Seq([Sub(self.expr(e.value), None) if isinstance(e, ast.Starred) else self.expr(e)
                        for e in node.elts])
        if isinstance(node, ast.Dict):
            return Dict([(self.expr(k) if k is not None else None, self.expr(v))
                         for k, v in zip(node.keys, node.values)])
        if isinstance(node, ast.Lambda):
            return FuncRef(self.function("<lambda>", node.args, node.body))
        if isinstance(node, ast.NamedExpr):
            return Opaque([self.expr(node.value)])
        if isinstance(node, ast.Await):
            return self.expr(node.value)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            loops = [(self.target(g.target), self.expr(g.iter), [self.expr(c) for c in g.ifs])
                     for g in node.generators]
            if isinstance(node, ast.DictComp):
                return Comp("dict", self.expr(node.key), self.expr(node.value), loops)
            return Comp(_COMP[type(node)], None, self.expr(node.elt), loops)
        # f-strings, yields...: opaque, but calls inside them still run.
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
    b = _IRBuilder(source, module, is_package, site_ids)
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
