"""Stores an entry script makes that a reader of one attribute cannot see by its name: the
readers of the sizes an entry sets (config/entry_assign.py) and of its parsed argparse values
(config/entry_script.py `arg_value`) take any such store as writing every name, so the value is
unknown rather than the one read (fail closed).

Read with the stdlib `ast`: `setattr(x, NAME, v)` with a name not written as a literal, any
`X.__setattr__(...)` (`object.__setattr__(x, k, v)`, the frozen-dataclass idiom; not a
`__setattr__` override's own `super().__setattr__`),
`vars(x)[k] = v`, `x.__dict__[k] = v`, `vars(x).update(...)` / `x.__dict__.update(...)`, an
attribute stored as part of a tuple, list or starred target (`a.tp, a.pp = ...`), a `for`
or `with ... as` target; and (keywords only) a call passing `**expr` whose keys the file does not
spell out: not a dict literal, the enclosing function's own `**kwargs`, nor a call of a function
of the file that returns only such dicts.
"""

from __future__ import annotations

import ast

from auditor import rulebook

_UPDATES = frozenset({"update", "setdefault", "__setitem__"})


def _is_namespace(node: ast.expr) -> bool:
    """`vars(x)` or `x.__dict__`: an object's attributes as a dict."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars":
        return True
    return isinstance(node, ast.Attribute) and node.attr == "__dict__"


def unnamed_stores(nodes: list[ast.AST]) -> list[int]:
    """The lines of `nodes` that store an attribute by a name not written there."""
    out = []
    forwards = {id(n) for f in nodes if isinstance(f, ast.FunctionDef) and f.name == "__setattr__"
                for n in ast.walk(f) if _super_setattr(n)}
    for node in nodes:
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == "setattr"
                    and not (len(node.args) >= 2 and isinstance(node.args[1], ast.Constant))):
                out.append(node.lineno)
            elif isinstance(f, ast.Attribute) and (f.attr == "__setattr__" and id(node) not in forwards
                                                   or f.attr in _UPDATES and _is_namespace(f.value)):
                out.append(node.lineno)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) and _is_namespace(node.value):
            out.append(node.lineno)
    return out


def _super_setattr(node: ast.AST) -> bool:
    """`super().__setattr__(...)`: in a `__setattr__` override, the store it stands for is the
    `x.name = v` (or `setattr`) that called it, read where it is written."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__"
            and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "super")


def nested_attr_stores(nodes: list[ast.AST], name: str) -> list[int]:
    """The lines of `nodes` storing attribute `name` other than as an assignment's whole target
    (`x.name = v`, `x.name += v`, `x.name: T = v`): in a tuple, list or starred target, a `for`
    or `with` target, a `del`."""
    plain: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Assign):
            plain |= {id(t) for t in node.targets}
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            plain.add(id(node.target))
    return [n.lineno for n in nodes if isinstance(n, ast.Attribute) and n.attr == name
            and isinstance(n.ctx, (ast.Store, ast.Del)) and id(n) not in plain]


def opaque_keywords(nodes: list[ast.AST], scope: ast.AST, tree: ast.Module) -> list[int]:
    """The lines of calls among `nodes` (of `scope`) passing `**expr` whose keys the file does not
    spell out (see the module docstring)."""
    return [n.lineno for n in nodes if isinstance(n, ast.Call)
            and any(k.arg is None and not _spelled(k.value, scope, tree, 0) for k in n.keywords)]


def _spelled(expr: ast.expr, scope: ast.AST, tree: ast.Module, depth: int) -> bool:
    """Whether every key of the dict `expr` is written in the file (its dict literals and keywords
    are the readers' writes)."""
    if depth > 4:
        return False
    if isinstance(expr, ast.Dict):
        return all(k is not None or _spelled(v, scope, tree, depth + 1) for k, v in zip(expr.keys, expr.values))
    if isinstance(expr, ast.IfExp):
        return _spelled(expr.body, scope, tree, depth + 1) and _spelled(expr.orelse, scope, tree, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "dict":
        return not expr.args and all(k.arg is not None or _spelled(k.value, scope, tree, depth + 1)
                                     for k in expr.keywords)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        defs = [f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                and f.name == expr.func.id]
        if len(defs) != 1:
            return False
        returns = [r for r in ast.walk(defs[0]) if isinstance(r, ast.Return)]
        return bool(returns) and all(r.value is not None and _spelled(r.value, defs[0], tree, depth + 1)
                                     for r in returns)
    if isinstance(expr, ast.Name):  # the function's own **kwargs, or a name bound only to such dicts
        kwarg = scope.args.kwarg if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        nodes = list(ast.walk(scope))
        stores = [n for n in nodes if isinstance(n, ast.Name) and n.id == expr.id and isinstance(n.ctx, ast.Store)]
        assigns = [n.value for n in nodes if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.targets[0], ast.Name) and n.targets[0].id == expr.id]
        bound = (kwarg is not None and kwarg.arg == expr.id) or bool(assigns)
        return (bound and len(stores) == len(assigns) and not any(_changes(n, expr.id, nodes) for n in nodes)
                and all(_spelled(v, scope, tree, depth + 1) for v in assigns))
    return False


def _changes(node: ast.AST, name: str, nodes: list[ast.AST]) -> bool:
    """`node` (among `nodes`) adds to dict `name` a key not written as a literal (`name[k] = v`,
    `name.update(...)`); a key that is a loop's name over a tuple or list of literals is written
    (`for k in ("a", "b"): name[k] = v`)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
        return isinstance(node.ctx, ast.Store) and not (isinstance(node.slice, ast.Constant)
                                                         or _literal_loop(node.slice, nodes))
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name
            and node.attr in _UPDATES)


def _literal_loop(key: ast.expr, nodes: list[ast.AST]) -> bool:
    """`key` is a name bound only as the target of `for` loops over literals, none of them a
    rules/megatron-core.toml `[config_attribute]` key: a write `d[key] = v` of such a key is
    not one the readers of that key see by its name (entry_assign.py `_writes`)."""
    if not isinstance(key, ast.Name):
        return False
    loops = [n for n in nodes if isinstance(n, (ast.For, ast.AsyncFor)) and isinstance(n.target, ast.Name)
             and n.target.id == key.id]
    sizes = set(rulebook.load("megatron-core").data["config_attribute"]["keys"])
    return (bool(loops) and len(binders(nodes, key.id)) == len(loops)
            and all(isinstance(n.iter, (ast.Tuple, ast.List))
                    and all(isinstance(e, ast.Constant) and e.value not in sizes for e in n.iter.elts)
                    for n in loops))


def binders(nodes, name: str) -> list[ast.AST]:
    """The nodes among `nodes` that bind `name`: a store or `del`, a parameter, a `def` or
    `class`, an `except ... as`, an import, a `match` capture, a `global`/`nonlocal`."""
    out: list[ast.AST] = []
    for n in nodes:
        if isinstance(n, ast.Name):
            bound = n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
        elif isinstance(n, ast.arg):
            bound = n.arg == name
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = n.name == name
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            bound = n.name == name
        elif isinstance(n, ast.MatchMapping):
            bound = n.rest == name
        elif isinstance(n, ast.alias):
            bound = (n.asname or n.name.split(".")[0]) == name
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            bound = name in n.names
        else:
            bound = False
        if bound:
            out.append(n)
    return out
