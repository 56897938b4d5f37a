"""A module's code as a small IR of plain data for the call-graph interpreter, built from the stdlib `ast`
tree the site finder walked.

Only what decides which calls run is kept: bindings, calls (with arguments), branch tests (with
their source text, shown as guards), returns, attribute assignments (monkeypatches) and the P2P
sites found in the same tree. Everything else becomes an opaque value. The IR is cached per file
content like the site inventory, so the parse happens once; the cache is JSON, so the IR holds
only JSON values (a tuple read back from the cache is a list: the interpreter indexes nodes and
never tells the two apart).

Expressions are tuples headed by a kind:
  ("name", id) ("attr", base, attr) ("const", value) ("seq", [e]) ("dict", [(key|None, e)])
  ("call", func, [args], {kw: e}, star, dstar, text)   star/dstar: the *args / **kwargs expr
  ("cmp", left, [(op, right)]) ("bool", "and"|"or", [e]) ("not", e) ("ifexp", test, body, orelse)
  ("binop", op, left, right) ("sub", base, index) ("func", qualname) ("site", site_id, e)
  ("opaque", [subexpressions evaluated for their calls])
Statements:
  ("assign", [targets], value) ("expr", e) ("return", e|None) ("raise",)
  ("if", test, test_text, body, orelse) ("loop", test|None, text, target|None, iter|None, body,
  orelse) ("with", [(e, target|None)], body) ("try", body, [handler bodies], orelse, final)
  ("def", name, qualname) ("class", name, qualname) ("import", [(local, target, is_module)])
  ("global", [names]) ("pass",)
"""

from __future__ import annotations

import ast
from typing import Any

from auditor.static.names import dotted, import_bindings, qualname
from auditor.static.source import Source

Expr = tuple
Stmt = tuple

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
        self.functions: dict[str, dict[str, Any]] = {}
        self.classes: dict[str, dict[str, Any]] = {}
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
            return [("if", self.expr(node.test), self.text(node.test, start), self.block(node.body),
                     orelse)]
        if isinstance(node, (ast.For, ast.AsyncFor)):
            target_end = self.source.offsets(node.target)[1]
            return [("loop", None, "for " + self.text(node.target, start) + " in " +
                     self.text(node.iter, target_end), self.target(node.target),
                     self.expr(node.iter), self.block(node.body), self.block(node.orelse))]
        if isinstance(node, ast.While):
            return [("loop", self.expr(node.test), "while " + self.text(node.test, start), None, None,
                     self.block(node.body), self.block(node.orelse))]
        if isinstance(node, (ast.With, ast.AsyncWith)):
            items = [(self.expr(i.context_expr),
                      self.target(i.optional_vars) if i.optional_vars is not None else None)
                     for i in node.items]
            return [("with", items, self.block(node.body))]
        if isinstance(node, (ast.Try, ast.TryStar)):
            handlers = [self.block(h.body) for h in node.handlers]
            return [("try", self.block(node.body), handlers, self.block(node.orelse),
                     self.block(node.finalbody))]
        if isinstance(node, _FUNCTIONS):
            qn = self.function(node.name, node.args, node.body, node.decorator_list)
            return [("def", node.name, qn)]
        if isinstance(node, ast.ClassDef):
            return [("class", node.name, self.klass(node))]
        if isinstance(node, ast.Match):
            cases = [self.block(c.body) for c in node.cases]
            return [("try", [("expr", self.expr(node.subject))], cases, [], [])]
        if isinstance(node, ast.Assign):
            return [("assign", [self.target(t) for t in node.targets], self.expr(node.value))]
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                return []
            return [("assign", [self.target(node.target)], self.expr(node.value))]
        if isinstance(node, ast.AugAssign):
            value = ("opaque", [self.expr(node.target), self.expr(node.value)])
            return [("assign", [self.target(node.target)], value)]
        if isinstance(node, ast.Expr):
            return [("expr", self.expr(node.value))]
        if isinstance(node, ast.Return):
            return [("return", self.expr(node.value) if node.value is not None else None)]
        if isinstance(node, ast.Raise):
            return [("raise",)]
        if isinstance(node, ast.Assert):
            return [("expr", self.expr(node.test))]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bindings = import_bindings(node, self.module, self.is_package)
            return [("import", bindings)] if bindings else []
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return [("global", list(node.names))]
        return []

    def target(self, node: ast.expr) -> Expr:
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return self.expr(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            return ("seq", [self.target(e) for e in node.elts])
        if isinstance(node, ast.Starred):
            return self.target(node.value)
        return ("opaque", [])

    # --- definitions ---------------------------------------------------------------------------

    def function(self, name: str, params: ast.arguments, body: list[ast.stmt] | ast.expr,
                 decorators: list[ast.expr] = ()) -> str:  # type: ignore[assignment]
        qn = self.qualname(name)
        plist: list[tuple[str, Expr | None, str]] = []
        positional = [*params.posonlyargs, *params.args]
        defaults = [None] * (len(positional) - len(params.defaults)) + list(params.defaults)
        for p, default in zip(positional, defaults):
            plist.append((p.arg, self.expr(default) if default is not None else None, "pos"))
        if params.vararg is not None:
            plist.append((params.vararg.arg, None, "star"))
        for p, default in zip(params.kwonlyargs, params.kw_defaults):
            plist.append((p.arg, self.expr(default) if default is not None else None, "kwonly"))
        if params.kwarg is not None:
            plist.append((params.kwarg.arg, None, "dstar"))
        decos = [self.expr(d) for d in decorators]
        in_class = bool(self.scope) and self.scope[-1][0] == "class"
        self.scope.append(("function", name))
        if isinstance(body, ast.expr):
            body_ir = [("return", self.expr(body))]
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
        self.functions[key] = {
            "qualname": qn, "name": name, "params": plist, "body": body_ir,
            "decorators": decos, "method": in_class,
            "nested": any(k == "function" for k, _ in self.scope),
        }
        return key

    def klass(self, node: ast.ClassDef) -> str:
        qn = self.qualname(node.name)
        bases = [self.expr(b.value if isinstance(b, ast.Starred) else b) for b in node.bases]
        self.scope.append(("class", node.name))
        body = self.block(node.body)
        self.scope.pop()
        self.classes[qn] = {"qualname": qn, "name": node.name, "bases": bases, "body": body}
        return qn

    # --- expressions ---------------------------------------------------------------------------

    def expr(self, node: ast.expr | None) -> Expr:
        out = self._expr(node)
        site = self.site_ids.get(id(node)) if node is not None else None
        return ("site", site, out) if site is not None else out

    def _expr(self, node: ast.expr | None) -> Expr:
        if node is None:
            return ("const", None)
        if isinstance(node, ast.Name):
            return ("name", node.id)
        if isinstance(node, ast.Attribute):
            return ("attr", self.expr(node.value), node.attr)
        if isinstance(node, ast.Call):
            args, kwargs, star, dstar = [], {}, None, None
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
            return ("call", self.expr(node.func), args, kwargs, star, dstar,
                    dotted(node.func) or self.text(node.func))
        if isinstance(node, ast.Constant):
            value = node.value
            if value is None or isinstance(value, (bool, int, float)) or \
                    (isinstance(value, str) and not self.source.concatenated(node)):
                return ("const", value)
            return ("opaque", [])  # bytes, complex, `...`, implicitly concatenated strings
        if isinstance(node, ast.Compare):
            return ("cmp", self.expr(node.left),
                    [(_CMP.get(type(op), "?"), self.expr(c)) for op, c in zip(node.ops, node.comparators)])
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            values = []
            for side in node.values:
                e = self.expr(side)
                values.extend(e[2] if e[0] == "bool" and e[1] == op else [e])
            return ("bool", op, values)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return ("not", self.expr(node.operand))
            return ("binop", "neg", ("const", 0), self.expr(node.operand))
        if isinstance(node, ast.BinOp):
            return ("binop", _BINOP[type(node.op)], self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.IfExp):
            return ("ifexp", self.expr(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, ast.Subscript):
            index = self.source.index(node)
            return ("sub", self.expr(node.value), self.expr(index) if index is not None else None)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return ("seq", [self.expr(e.value if isinstance(e, ast.Starred) else e) for e in node.elts])
        if isinstance(node, ast.Dict):
            return ("dict", [(self.expr(k) if k is not None else None, self.expr(v))
                             for k, v in zip(node.keys, node.values)])
        if isinstance(node, ast.Lambda):
            return ("func", self.function("<lambda>", node.args, node.body))
        if isinstance(node, ast.NamedExpr):
            return ("opaque", [self.expr(node.value)])
        if isinstance(node, ast.Await):
            return self.expr(node.value)
        # Comprehensions, f-strings, yields...: opaque, but calls inside them still run.
        return ("opaque", [self.expr(c) for c in _call_children(node)])


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
          site_ids: dict[int, str]) -> dict[str, Any]:
    """The IR of one module: its top-level body, and every function and class in it by qualname.
    `site_ids`: the site found at each node (by `id`) of the same tree."""
    b = _Builder(source, module, is_package, site_ids)
    return {"module": module, "package": is_package, "body": b.block(tree.body),
            "functions": b.functions, "classes": b.classes}
