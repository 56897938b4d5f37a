"""What of a training script runs when the launcher runs it as a program, as far as the file
says: its module-level code (the `if __name__ == "__main__":` block included) and the functions
and methods it reaches by name. A parse in a function nothing reaches decides nothing about the
run (h33-review4 H5); a script that rewrites `sys.argv` parses another command line than the one
the launcher passes (H6). Both readings fail closed: a function named anywhere reached counts as
run (called, or passed on as a callback), and any store to `sys.argv` counts as a rewrite."""

from __future__ import annotations

import ast
from collections import deque

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
    from sys."""
    names = {"sys.argv"} | {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                            and n.module == "sys" for a in n.names if a.name == "argv"}
    for node in ast.walk(tree):
        target = node.value if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) \
            else node if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)) \
            else node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in _MUTATORS else None
        if target is not None and ast.unparse(target) in names:
            return True
    return any(isinstance(n, ast.AugAssign) and ast.unparse(n.target) in names for n in ast.walk(tree))
