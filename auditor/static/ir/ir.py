"""A module's code as a small IR of typed records for the call-graph interpreter.

Only what decides which calls run is kept: bindings, calls (with arguments), branch tests (with
their source text, shown as guards), returns, attribute assignments (monkeypatches) and the P2P
sites found in the same parse. Everything else becomes an opaque value. Each node kind is a
NamedTuple, so the interpreter matches them by kind and field (`case Call(func, args, ...)`).

Each record's last field, `tag`, names its kind with a default: a record is built from its
fields alone (`Name("x")`), and `json.dumps` writes it as it is, `[*fields, tag]`, which is the
analysis cache's form (`codec`). `build` makes the records from the stdlib `ast` tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

# --- expressions -------------------------------------------------------------------------------


class Name(NamedTuple):
    id: str
    tag: str = "name"


class Attr(NamedTuple):
    base: Expr
    attr: str
    tag: str = "attr"


class Const(NamedTuple):
    value: None | bool | int | float | str
    tag: str = "const"


class Seq(NamedTuple):
    items: list[Expr]
    tag: str = "seq"


class Dict(NamedTuple):
    items: list[tuple[Expr | None, Expr]]  # (key, value); key None: `**other`
    tag: str = "dict"


class Call(NamedTuple):
    func: Expr
    args: list[Expr]
    kwargs: dict[str, Expr]
    star: Expr | None  # the `*args` expression
    dstar: Expr | None  # the `**kwargs` expression
    text: str  # the callee as written
    tag: str = "call"


class Cmp(NamedTuple):
    left: Expr
    ops: list[tuple[str, Expr]]  # (operator, right operand), chained
    tag: str = "cmp"


class Bool(NamedTuple):
    op: str  # "and" | "or"
    values: list[Expr]
    tag: str = "bool"


class Not(NamedTuple):
    operand: Expr
    tag: str = "not"


class IfExp(NamedTuple):
    test: Expr
    body: Expr
    orelse: Expr
    tag: str = "ifexp"


class BinOp(NamedTuple):
    op: str
    left: Expr
    right: Expr
    tag: str = "binop"


class Sub(NamedTuple):
    base: Expr
    # None: a slice or several indices. The field shadows tuple.index, which the IR never calls.
    index: Expr | None  # type: ignore[assignment]
    tag: str = "sub"


class FuncRef(NamedTuple):
    """A lambda, stored as a function of the module under this qualname."""

    qualname: str
    tag: str = "func"


class SiteExpr(NamedTuple):
    """An expression at which the site finder found a P2P site."""

    site: str
    expr: Expr
    tag: str = "site"


class Opaque(NamedTuple):
    parts: list[Expr]  # subexpressions evaluated for their calls
    tag: str = "opaque"


class Comp(NamedTuple):
    """A comprehension (`[v for t in it if c]`, set, generator; `{k: v ...}` with `key`): its
    elements flow on, so that `{s.stage_index: s for s in self._stages}[i]` is the stages."""

    kind: str  # "list", "set", "gen", "dict"
    key: Expr | None
    value: Expr
    loops: list[tuple[Expr, Expr, list[Expr]]]  # (target, iterable, tests), outermost first
    tag: str = "comp"


Expr = (Name | Attr | Const | Seq | Dict | Call | Cmp | Bool | Not | IfExp | BinOp | Sub | FuncRef | SiteExpr
        | Opaque | Comp)

# --- statements --------------------------------------------------------------------------------


class Assign(NamedTuple):
    targets: list[Expr]
    value: Expr
    tag: str = "assign"


class ExprStmt(NamedTuple):
    value: Expr
    tag: str = "expr"


class Return(NamedTuple):
    value: Expr | None
    tag: str = "return"


class Raise(NamedTuple):
    tag: str = "raise"


class If(NamedTuple):
    test: Expr
    text: str  # the test as written, shown as a guard
    body: list[Stmt]
    orelse: list[Stmt]
    tag: str = "if"


class Loop(NamedTuple):
    test: Expr | None  # a while loop's test; None for a for loop
    text: str
    target: Expr | None  # a for loop's target and iterable
    iter: Expr | None
    body: list[Stmt]
    orelse: list[Stmt]
    tag: str = "loop"


class With(NamedTuple):
    items: list[tuple[Expr, Expr | None]]  # (context expression, target)
    body: list[Stmt]
    tag: str = "with"


class Try(NamedTuple):
    """A try statement; a `match` is one too (its cases are the handlers)."""

    body: list[Stmt]
    handlers: list[list[Stmt]]
    orelse: list[Stmt]
    final: list[Stmt]
    tag: str = "try"


class Def(NamedTuple):
    name: str
    qualname: str  # the key of the function in ModuleIR.functions
    tag: str = "def"


class Class(NamedTuple):
    name: str
    qualname: str
    tag: str = "class"


class Import(NamedTuple):
    bindings: list[tuple[str, str, bool]]  # (local name, target, is a module)
    tag: str = "import"


class StarImport(NamedTuple):
    """`from module import *`: the interpreter looks a name up in `module` when nothing else
    binds it (`Interpreter.star_lookup`)."""

    module: str
    tag: str = "star"


class Global(NamedTuple):
    names: list[str]
    tag: str = "global"


Stmt = (Assign | ExprStmt | Return | Raise | If | Loop | With | Try | Def | Class | Import | StarImport
        | Global)

# --- definitions -------------------------------------------------------------------------------


class Param(NamedTuple):
    name: str
    default: Expr | None
    kind: str  # "pos" | "star" | "kwonly" | "dstar"
    tag: str = "param"


class FunctionIR(NamedTuple):
    qualname: str
    name: str
    params: list[Param]
    body: list[Stmt]
    decorators: list[Expr]
    method: bool
    nested: bool
    tag: str = "function"


class ClassIR(NamedTuple):
    qualname: str
    name: str
    bases: list[Expr]
    body: list[Stmt]
    tag: str = "classdef"


class ModuleIR(NamedTuple):
    module: str
    package: bool
    body: list[Stmt]
    functions: Mapping[str, FunctionIR]  # by qualname; a second definition as `qualname#2`
    classes: dict[str, ClassIR]
    # (name, value) of each `NAME = value` a function makes to a name it declares `global`, by
    # the function's qualname: module bindings that may hold those values, walked or not.
    global_assignments: dict[str, list[tuple[str, Expr]]]
    tag: str = "module"


def star_imports(mod: ModuleIR) -> tuple[list[str], list[str] | None]:
    """(the modules `mod` star-imports, in order, at its top level or in blocks there; the
    strings of its first top-level `__all__ = [...]` or `(...)`, else None)."""
    stars: list[str] = []
    stack: list[Any] = list(reversed(mod.body))
    while stack:
        match stack.pop():
            case StarImport(module):
                stars.append(module)
            case If(_, _, body, orelse) | Loop(_, _, _, _, body, orelse):
                stack.extend(reversed([*body, *orelse]))
            case With(_, body):
                stack.extend(reversed(body))
            case Try(body, handlers, orelse, final):
                stack.extend(reversed([*body, *(s for h in handlers for s in h), *orelse, *final]))
    for s in mod.body:
        match s:
            case Assign([Name("__all__")], Seq(items)):
                return stars, [i.value for i in items if isinstance(i, Const) and isinstance(i.value, str)]
    return stars, None


def dotted(e: Expr) -> str | None:
    """`a.b.c` for a name or a chain of attributes on one, else None."""
    match e:
        case Name(name):
            return name
        case Attr(base, attr):
            head = dotted(base)
            return f"{head}.{attr}" if head else None
    return None


def decorator_names(fir: FunctionIR | None) -> set[str]:
    """The last part of each decorator's name (`staticmethod`, `functools.cached_property`)."""
    if not fir:
        return set()
    names = set()
    for d in fir.decorators:
        text = dotted(d) or (dotted(d.func) if isinstance(d, Call) else None)
        if text:
            names.add(text.rsplit(".", 1)[-1])
    return names


def names_in(stmts: list[Stmt], sites: set[str], defs: set[str],
             attrs: set[tuple[str, str]]) -> set[str]:
    """Names read anywhere in some statements; site ids met on the way go into `sites`, the
    qualnames of functions defined there into `defs`, and `name.attr` reads into `attrs`."""
    found: set[str] = set()
    stack: list[Any] = list(stmts)
    while stack:
        cur = stack.pop()
        match cur:
            case Name(name):
                found.add(name)
                continue
            case SiteExpr(site, _):
                sites.add(site)
            case Def(_, qualname):
                defs.add(qualname)
            case Attr(Name(name), attr):
                attrs.add((name, attr))
        if isinstance(cur, (tuple, list)):  # a record, a list of them, a pair in one
            stack.extend(x for x in cur if isinstance(x, (tuple, list, dict)))
        elif isinstance(cur, dict):
            stack.extend(cur.values())
    return found
