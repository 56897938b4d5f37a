"""A module's code as a small IR of plain data for the call-graph interpreter, built with libcst.

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

from typing import Any

import libcst as cst

from auditor.static.names import dotted, import_bindings, qualname

Expr = tuple
Stmt = tuple

_CMP = {
    cst.Equal: "==", cst.NotEqual: "!=", cst.LessThan: "<", cst.GreaterThan: ">",
    cst.LessThanEqual: "<=", cst.GreaterThanEqual: ">=", cst.Is: "is", cst.IsNot: "is not",
    cst.In: "in", cst.NotIn: "not in",
}
_TEXT_LIMIT = 160


class _Builder:
    def __init__(self, tree: cst.Module, module: str, is_package: bool, site_ids: dict[int, str]):
        self.tree = tree
        self.module = module
        self.is_package = is_package
        self.site_ids = site_ids
        self.functions: dict[str, dict[str, Any]] = {}
        self.classes: dict[str, dict[str, Any]] = {}
        self.scope: list[tuple[str, str]] = []  # (kind, name) for qualnames

    # --- naming --------------------------------------------------------------------------------

    def qualname(self, name: str) -> str:
        return qualname([*self.scope, ("", name)])

    def text(self, node: cst.CSTNode) -> str:
        code = " ".join(self.tree.code_for_node(node).split())
        return code if len(code) <= _TEXT_LIMIT else code[: _TEXT_LIMIT - 3] + "..."

    # --- statements ----------------------------------------------------------------------------

    def block(self, body: cst.BaseSuite | cst.CSTNode | None) -> list[Stmt]:
        if body is None:
            return []
        if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            stmts = body.body
        elif isinstance(body, (cst.Else, cst.Finally)):
            return self.block(body.body)
        else:
            stmts = [body]
        out: list[Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, node: cst.CSTNode) -> list[Stmt]:
        if isinstance(node, cst.SimpleStatementLine):
            return [x for small in node.body for x in self.small(small)]
        if isinstance(node, (cst.Assign, cst.Expr, cst.Return)):  # inside a suite
            return self.small(node)
        if isinstance(node, cst.If):
            orelse: list[Stmt] = []
            if isinstance(node.orelse, cst.If):
                orelse = self.stmt(node.orelse)
            elif node.orelse is not None:
                orelse = self.block(node.orelse)
            return [("if", self.expr(node.test), self.text(node.test), self.block(node.body), orelse)]
        if isinstance(node, cst.For):
            return [("loop", None, "for " + self.text(node.target) + " in " + self.text(node.iter),
                     self.target(node.target), self.expr(node.iter), self.block(node.body),
                     self.block(node.orelse))]
        if isinstance(node, cst.While):
            return [("loop", self.expr(node.test), "while " + self.text(node.test), None, None,
                     self.block(node.body), self.block(node.orelse))]
        if isinstance(node, cst.With):
            items = [
                (self.expr(i.item), self.target(i.asname.name) if i.asname else None)
                for i in node.items
            ]
            return [("with", items, self.block(node.body))]
        if isinstance(node, (cst.Try, cst.TryStar)):
            handlers = [self.block(h.body) for h in node.handlers]
            return [("try", self.block(node.body), handlers, self.block(node.orelse),
                     self.block(node.finalbody))]
        if isinstance(node, cst.FunctionDef):
            qn = self.function(node.name.value, node.params, node.body, node.decorators)
            return [("def", node.name.value, qn)]
        if isinstance(node, cst.ClassDef):
            return [("class", node.name.value, self.klass(node))]
        if isinstance(node, cst.Match):
            cases = [self.block(c.body) for c in node.cases]
            return [("try", [("expr", self.expr(node.subject))], cases, [], [])]
        return []

    def small(self, node: cst.CSTNode) -> list[Stmt]:
        if isinstance(node, cst.Assign):
            return [("assign", [self.target(t.target) for t in node.targets], self.expr(node.value))]
        if isinstance(node, cst.AnnAssign):
            if node.value is None:
                return []
            return [("assign", [self.target(node.target)], self.expr(node.value))]
        if isinstance(node, cst.AugAssign):
            value = ("opaque", [self.expr(node.target), self.expr(node.value)])
            return [("assign", [self.target(node.target)], value)]
        if isinstance(node, cst.Expr):
            return [("expr", self.expr(node.value))]
        if isinstance(node, cst.Return):
            return [("return", self.expr(node.value) if node.value is not None else None)]
        if isinstance(node, cst.Raise):
            return [("raise",)]
        if isinstance(node, cst.Assert):
            return [("expr", self.expr(node.test))]
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            bindings = import_bindings(node, self.module, self.is_package)
            return [("import", bindings)] if bindings else []
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            return [("global", [n.name.value for n in node.names])]
        return []

    def target(self, node: cst.BaseExpression) -> Expr:
        if isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
            return self.expr(node)
        if isinstance(node, (cst.Tuple, cst.List)):
            return ("seq", [self.target(e.value) for e in node.elements])
        if isinstance(node, cst.StarredElement):
            return self.target(node.value)
        return ("opaque", [])

    # --- definitions ---------------------------------------------------------------------------

    def function(self, name: str, params: cst.Parameters, body: cst.CSTNode,
                 decorators: tuple = ()) -> str:
        qn = self.qualname(name)
        plist: list[tuple[str, Expr | None, str]] = []
        for p in params.posonly_params:
            plist.append((p.name.value, self.expr(p.default) if p.default else None, "pos"))
        for p in params.params:
            plist.append((p.name.value, self.expr(p.default) if p.default else None, "pos"))
        if isinstance(params.star_arg, cst.Param):
            plist.append((params.star_arg.name.value, None, "star"))
        for p in params.kwonly_params:
            plist.append((p.name.value, self.expr(p.default) if p.default else None, "kwonly"))
        if params.star_kwarg is not None:
            plist.append((params.star_kwarg.name.value, None, "dstar"))
        decos = [self.expr(d.decorator) for d in decorators]
        in_class = bool(self.scope) and self.scope[-1][0] == "class"
        self.scope.append(("function", name))
        body_ir = self.expr(body) if isinstance(body, cst.BaseExpression) else self.block(body)
        self.scope.pop()
        if isinstance(body, cst.BaseExpression):
            body_ir = [("return", body_ir)]
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

    def klass(self, node: cst.ClassDef) -> str:
        qn = self.qualname(node.name.value)
        bases = [self.expr(b.value) for b in node.bases]
        self.scope.append(("class", node.name.value))
        body = self.block(node.body)
        self.scope.pop()
        self.classes[qn] = {"qualname": qn, "name": node.name.value, "bases": bases, "body": body}
        return qn

    # --- expressions ---------------------------------------------------------------------------

    def expr(self, node: cst.BaseExpression | None) -> Expr:
        out = self._expr(node)
        site = self.site_ids.get(id(node)) if node is not None else None
        return ("site", site, out) if site is not None else out

    def _expr(self, node: cst.BaseExpression | None) -> Expr:
        if node is None:
            return ("const", None)
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return ("const", {"True": True, "False": False, "None": None}[node.value])
            return ("name", node.value)
        if isinstance(node, cst.Attribute):
            return ("attr", self.expr(node.value), node.attr.value)
        if isinstance(node, cst.Call):
            args, kwargs, star, dstar = [], {}, None, None
            for a in node.args:
                if a.star == "*":
                    star = self.expr(a.value)
                elif a.star == "**":
                    dstar = self.expr(a.value)
                elif a.keyword is not None:
                    kwargs[a.keyword.value] = self.expr(a.value)
                else:
                    args.append(self.expr(a.value))
            return ("call", self.expr(node.func), args, kwargs, star, dstar,
                    dotted(node.func) or self.text(node.func))
        if isinstance(node, (cst.Integer, cst.Float)):
            try:
                return ("const", int(node.value.replace("_", ""), 0))
            except ValueError:
                return ("const", float(node.value.replace("_", "")))
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            return ("const", value) if isinstance(value, str) else ("opaque", [])  # bytes
        if isinstance(node, cst.Comparison):
            return ("cmp", self.expr(node.left),
                    [(_CMP.get(type(c.operator), "?"), self.expr(c.comparator)) for c in node.comparisons])
        if isinstance(node, cst.BooleanOperation):
            op = "and" if isinstance(node.operator, cst.And) else "or"
            values = []
            for side in (node.left, node.right):
                e = self.expr(side)
                values.extend(e[2] if e[0] == "bool" and e[1] == op else [e])
            return ("bool", op, values)
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return ("not", self.expr(node.expression))
            return ("binop", "neg", ("const", 0), self.expr(node.expression))
        if isinstance(node, cst.BinaryOperation):
            return ("binop", type(node.operator).__name__, self.expr(node.left), self.expr(node.right))
        if isinstance(node, cst.IfExp):
            return ("ifexp", self.expr(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, cst.Subscript):
            index = None
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                index = self.expr(node.slice[0].slice.value)
            return ("sub", self.expr(node.value), index)
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            return ("seq", [self.expr(e.value) for e in node.elements])
        if isinstance(node, cst.Dict):
            items = []
            for e in node.elements:
                if isinstance(e, cst.DictElement):
                    items.append((self.expr(e.key), self.expr(e.value)))
                else:
                    items.append((None, self.expr(e.value)))
            return ("dict", items)
        if isinstance(node, cst.Lambda):
            return ("func", self.function("<lambda>", node.params, node.body))
        if isinstance(node, cst.NamedExpr):
            return ("opaque", [self.expr(node.value)])
        if isinstance(node, cst.Await):
            return self.expr(node.expression)
        # Comprehensions, f-strings, yields...: opaque, but calls inside them still run.
        return ("opaque", [self.expr(c) for c in _call_children(node)])


def _call_children(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The outermost calls and site references inside an opaque expression."""
    found: list[cst.BaseExpression] = []
    stack = list(node.children)
    while stack:
        cur = stack.pop()
        if isinstance(cur, (cst.Call, cst.Attribute)):
            found.append(cur)
            continue
        if isinstance(cur, cst.Lambda):
            continue
        stack.extend(cur.children)
    return found


def build(tree: cst.Module, module: str, is_package: bool, site_ids: dict[int, str]) -> dict[str, Any]:
    """The IR of one module: its top-level body, and every function and class in it by qualname."""
    b = _Builder(tree, module, is_package, site_ids)
    body = b.block(cst.IndentedBlock(body=tree.body)) if tree.body else []
    return {"module": module, "package": is_package, "body": body,
            "functions": b.functions, "classes": b.classes}
