"""What of a training script runs when the launcher runs it as a program, as far as the file
says: its module-level code (the `if __name__ == "__main__":` block included) and the functions
and methods it reaches by name. A parse in a function nothing reaches decides nothing about the
run (h33-review4 H5); a script that rewrites `sys.argv` parses another command line than the one
the launcher passes (H6). Both readings fail closed: a function named anywhere reached counts as
run (called, or passed on as a callback), and any store to `sys.argv` counts as a rewrite."""

from __future__ import annotations

import ast
from collections import deque

from auditor.config.entry_script import is_main_guard

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
                       "__setitem__", "__delitem__", "__iadd__"})


def reached(tree: ast.Module) -> set[int]:
    """The ids of the nodes of `tree` that run when it runs as a program: module-level code, and
    the body of every function or method whose name (`f(...)`, `obj.f(...)`, `f` passed on) code
    already reached uses, and of every method of a class it uses."""
    by_name: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, _DEFS):
            by_name.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.ClassDef):  # a class used runs its methods (`__call__`, `__init__`)
            by_name.setdefault(node.name, []).extend(f for f in node.body if isinstance(f, _DEFS))
    out: set[int] = set()
    done: set[str] = set()
    todo: deque[ast.AST] = deque([tree])
    while todo:
        for node in _own_code(todo.popleft()):
            out.add(id(node))
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
            if name is not None and name not in done:
                done.add(name)
                todo.extend(by_name.get(name, ()))
    return out


def _own_code(node: ast.AST) -> list[ast.AST]:
    """The nodes of `node` that run when it runs: not the bodies of the functions it defines
    (their decorators and defaults do run)."""
    out: list[ast.AST] = []
    todo = deque(node.body if isinstance(node, _DEFS) else [node])
    while todo:
        here = todo.popleft()
        out.append(here)
        if isinstance(here, _DEFS):
            args = here.args
            todo.extend([*here.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d)])
        else:
            todo.extend(ast.iter_child_nodes(here))
    return out


def writes_argv(tree: ast.Module) -> bool:
    """Whether the script stores to `sys.argv` (`sys.argv = ...`, `sys.argv[1:] = ...`,
    `del sys.argv[1]`) or changes it in place (`sys.argv.append(...)`), also as `argv` imported
    from sys, through sys imported under another name (`import sys as s; s.argv += [...]`) or a
    name bound to it (`argv = sys.argv; argv.extend([...])`): the same list."""
    names = {"sys.argv"} | {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                            and n.module == "sys" for a in n.names if a.name == "argv"}
    names |= {f"{a.asname}.argv" for n in ast.walk(tree) if isinstance(n, ast.Import)
              for a in n.names if a.name == "sys" and a.asname}
    bound = [(t, n.value) for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
             for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)]
    while new := {t.id for t, value in bound if value is not None and ast.unparse(value) in names} - names:
        names |= new  # `argv = sys.argv`, then `args = argv`: every name of the one list
    for node in ast.walk(tree):
        target = node.value if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) \
            else node if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)) \
            else node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in _MUTATORS else None
        if target is not None and ast.unparse(target) in names:
            return True
    return any(isinstance(n, ast.AugAssign) and ast.unparse(n.target) in names for n in ast.walk(tree))


_TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))  # TryStar: Python 3.11
_NEVER = (ast.ClassDef, ast.Lambda, ast.Match, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def always_runs(tree: ast.Module, target: ast.AST) -> bool:
    """Whether `target` runs on every run of `tree` as a program that gets that far (h33-review6
    H4): on the way up from it to module level no if, conditional expression, boolean operator,
    loop, comprehension, lambda, match, class body or try with a handler (its `finally` excepted)
    may hold it,
    except the body of a module-level `if __name__ == "__main__":` (a condition's test, a loop's
    iterable and a boolean operator's first operand do run); a function holding it must have no
    return before it and be called so, by name, from code that itself always runs. Fail open for a
    definite verdict: anything else (a callback, a method, a call under a condition) is False."""
    parent = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    return _always(tree, target, parent, set())


def _always(tree: ast.Module, node: ast.AST, parent: dict[int, ast.AST], seen: set[str]) -> bool:
    child = node
    while id(child) in parent:
        up = parent[id(child)]
        if isinstance(up, _DEFS):
            return _called_always(tree, up, node, parent, seen)
        if isinstance(up, _NEVER):
            return False
        if isinstance(up, (ast.For, ast.AsyncFor)) and child is not up.iter:
            return False  # a loop body may run no time
        if isinstance(up, ast.While) and child is not up.test:
            return False
        if isinstance(up, ast.BoolOp) and child is not up.values[0]:
            return False
        if isinstance(up, (ast.If, ast.IfExp)) and child is not up.test and not (
                up in tree.body and child in up.body and is_main_guard(up)):
            return False
        if isinstance(up, _TRIES) and child not in up.finalbody and (up.handlers or child not in up.body):
            return False  # a handler may catch its exit, or skip it after an earlier statement raised
        child = up
    return True


def _called_always(tree: ast.Module, fn: ast.AST, node: ast.AST, parent: dict[int, ast.AST],
                   seen: set[str]) -> bool:
    """Whether function `fn` (holding `node`) gets to `node` on every call and is called by name
    from code that always runs."""
    assert isinstance(fn, _DEFS)
    if fn.name in seen or isinstance(parent.get(id(fn)), ast.ClassDef):
        return False
    if any(isinstance(r, ast.Return) and r.lineno < getattr(node, "lineno", 0) for r in _own_code(fn)):
        return False  # a return before it: the call may end first
    seen = seen | {fn.name}
    return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == fn.name
               and _always(tree, c, parent, seen) for c in ast.walk(tree))


def exit_caught(tree: ast.Module, target: ast.AST) -> bool:
    """Whether a try around `target` in its own code (not its callers') has a handler that
    catches the SystemExit argparse raises: bare `except:`, `except SystemExit` or
    `except BaseException` (alone or in a tuple); then the run goes on past a failed parse."""
    parent = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    child = target
    while id(child) in parent:
        up = parent[id(child)]
        if isinstance(up, _TRIES) and child in up.body and any(_catches_exit(h) for h in up.handlers):
            return True
        child = up
    return False


def _catches_exit(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(ast.unparse(t).rpartition(".")[2] in ("SystemExit", "BaseException") for t in types)
