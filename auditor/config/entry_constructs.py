"""Which `**` calls of an entry's local module only build a new object, so that they write no
attribute of the model provider the entry script configured (config/entry_assign.py).

A call passing `**dict` whose keys the file does not spell out is read as writing every setting
(config/entry_stores.py `opaque_keywords`), since it may be `provider.update(**d)`. One shape
only is read as making a new object: `cls(**d)` in a `@classmethod` whose first parameter is
`cls`, defined outside any class body (a method patched onto a class not read:
Megatron-Bridge examples/conversion/vlm_generate_utils.py:54-60 at 067f987df0, a processor's
`from_dict`). It is handed nothing but `**` dicts, and keywords whose value is an item taken out
of one of those dicts (`media_proc_cfg = config.pop(...)`, as handing it inside the dict would):
a keyword or positional argument may hand the constructor the provider to write
(`Wrapper(provider=p, **d)`). `Name(**d)` of a class the module defines is not counted: its
metaclass, decorators, `__new__` or methods may write any object (h33-review3 H1-H3). The
entry's provider is the new object only where the entry binds it from such a module:
`bound_from_framework` checks that each name the entry writes a setting on is bound only from a
framework's calls (rules' modeled packages), else every `**` call counts as before (fail closed).
"""

from __future__ import annotations

import ast

from auditor.config.entry_stores import binders


def constructs(node: ast.AST, scope: ast.AST, tree: ast.Module) -> bool:
    """`node` is `cls(...)` of a patched classmethod `scope`, handed only `**` dicts and items
    taken out of them (see the module docstring)."""
    if (not isinstance(node, ast.Call) or node.args or not isinstance(node.func, ast.Name)
            or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or _in_class_body(tree, scope)):
        return False
    first = scope.args.posonlyargs + scope.args.args
    spread = {k.value.id for k in node.keywords if k.arg is None and isinstance(k.value, ast.Name)}
    return (bool(first) and first[0].arg == node.func.id and _is_classmethod(scope)
            and not _stored(ast.walk(scope), node.func.id, skip=first[0])
            and all(k.arg is None and isinstance(k.value, ast.Name)
                    or k.arg is not None and _taken_out(k.value, spread, scope) for k in node.keywords))


def _in_class_body(tree: ast.Module, scope: ast.AST) -> bool:
    return any(isinstance(c, ast.ClassDef) and scope in c.body for c in ast.walk(tree))


def _taken_out(value: ast.expr, spread: set[str], scope: ast.AST) -> bool:
    """`value` is a name `scope` binds once, to `D.pop("k"[, literal])` / `D.get(...)` / `D[...]` of a dict
    `D` the call also hands as `**D`: handing the item by name hands what the dict held."""
    if not isinstance(value, ast.Name):
        return False
    binds = [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == value.id
             and isinstance(n.ctx, (ast.Store, ast.Del))]
    assigns = [n.value for n in ast.walk(scope) if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and n.targets[0].id == value.id]
    if len(binds) != 1 or len(assigns) != 1 or _stored(
            (n for n in ast.walk(scope) if not isinstance(n, ast.Name)), value.id):
        return False
    item = assigns[0]
    if isinstance(item, ast.Call) and isinstance(item.func, ast.Attribute) and item.func.attr in ("pop", "get"):
        # `D.pop("k", provider)` hands the default, perhaps the provider: only a literal key, and
        # no default or a literal one (`{}`, None), takes out what the dict held.
        if (item.keywords or not 1 <= len(item.args) <= 2 or not isinstance(item.args[0], ast.Constant)
                or len(item.args) == 2 and not _literal(item.args[1])):
            return False
        item = item.func.value
    elif isinstance(item, ast.Subscript):
        item = item.value
    else:
        return False
    return isinstance(item, ast.Name) and item.id in spread


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _is_classmethod(scope: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "classmethod" for d in scope.decorator_list)


def _stored(nodes, name: str, skip: ast.arg | None = None) -> bool:
    """`name` is bound anywhere among `nodes` (other than as the parameter `skip`)."""
    return any(n is not skip for n in binders(nodes, name))


def bound_from_framework(tree: ast.Module, keys: list[str], frameworks: frozenset[str]) -> bool:
    """Every name the script writes one of `keys` on (`model_provider.pipeline_model_parallel_size
    = pp`) is bound only by assignments from calls rooted in a framework's import
    (`AutoBridge.from_hf_pretrained(...)`, then `bridge.to_megatron_provider(...)` on that name),
    at most a few names deep: a local module's new object cannot be that provider."""
    bases = {t.value.id for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
             for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
             if isinstance(t, ast.Attribute) and t.attr in keys and isinstance(t.value, ast.Name)}
    imported = {a.asname or a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names
                if ((n.module or "") if isinstance(n, ast.ImportFrom) else a.name).split(".")[0] in frameworks
                and not (isinstance(n, ast.ImportFrom) and n.level)}
    return all(_from(tree, b, imported, 4) for b in bases)


def _from(tree: ast.Module, name: str, imported: set[str], depth: int) -> bool:
    """Each binding of `name` in the file is `name = ROOT....(...)` with ROOT a framework's
    import or a name bound so in turn."""
    if depth == 0 or name in imported:
        return name in imported
    binds = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, (ast.Store, ast.Del))]
    assigns = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    if not assigns or len(binds) != len(assigns) or _stored(
            (n for n in ast.walk(tree) if not isinstance(n, ast.Name)), name):
        return False
    return all(isinstance(v, ast.Call) and (root := _root(v.func)) is not None
               and root != name and _from(tree, root, imported, depth - 1) for v in assigns)


def _root(expr: ast.expr) -> str | None:
    """The name a call's function hangs on: `bridge` of `bridge.to_megatron_provider`."""
    while isinstance(expr, (ast.Attribute, ast.Call)):
        expr = expr.value if isinstance(expr, ast.Attribute) else expr.func
    return expr.id if isinstance(expr, ast.Name) else None
