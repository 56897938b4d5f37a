"""Which `**` calls of an entry's local module only build a new object, so that they write no
attribute of the model provider the entry script configured (config/entry_assign.py).

A call passing `**dict` whose keys the file does not spell out is read as writing every setting
(config/entry_stores.py `opaque_keywords`), since it may be `provider.update(**d)`. A call of a
class under construction makes a new object instead: `cls(**d)` in a `@classmethod` whose first
parameter is `cls` (Megatron-Bridge examples/conversion/vlm_generate_utils.py:54-60 at 067f987df0,
a processor's `from_dict` patched onto a class not read), or `Name(**d)` of a class the module
defines (whose own methods are read as scopes of the module). A call with a positional argument
is not counted as one (`Wrapper(provider, **d)` may write what it is handed); what the keywords
hand a constructor not read is that code's, as for any call into code not read. The entry's
provider is the new object only where the entry binds it from such a module:
`bound_from_framework` checks that each name the entry writes a setting on is bound only from a
framework's calls (rules' modeled packages), else every `**` call counts as before (fail closed).
"""

from __future__ import annotations

import ast


def constructs(node: ast.AST, scope: ast.AST, tree: ast.Module) -> bool:
    """`node` is a call building a new object of a class (see the module docstring), handed no
    positional argument."""
    if not isinstance(node, ast.Call) or node.args or not isinstance(node.func, ast.Name):
        return False
    name = node.func.id
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        first = scope.args.posonlyargs + scope.args.args
        if (first and first[0].arg == name and _is_classmethod(scope)
                and not _stored(ast.walk(scope), name, skip=first[0])):
            return True
    classes = [c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == name]
    return len(classes) == 1 and not _stored(ast.walk(tree), name) and not _imported(tree, name)


def _is_classmethod(scope: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "classmethod" for d in scope.decorator_list)


def _stored(nodes, name: str, skip: ast.arg | None = None) -> bool:
    """`name` is bound anywhere among `nodes` (other than as the parameter `skip`)."""
    for n in nodes:
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(n, ast.arg) and n.arg == name and n is not skip:
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name:
            return True
    return False


def _imported(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name.split(".")[0]) == name
                                                                     for a in n.names)
               for n in ast.walk(tree))


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
