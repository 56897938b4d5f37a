"""The parallel sizes an entry hands a model loader of its checkout's own source, which sets them
on the provider from its keyword arguments (read with the stdlib `ast`, never run).

Megatron-Bridge scripts/inference/text_generation.py (067f987df0) takes `--tp/--pp/--ep` from
argparse groups that src/megatron/bridge/inference/text_generation.py adds
(`add_parallelism_args(parser)`, :443-458) and calls that module's
`load_bridge_model(tp=args.tp, pp=args.pp, ...)` (:212-226), which on both branches calls
`_apply_provider_parallelism(provider, **parallelism)` with `parallelism = dict(pp=pp, ...)`
(:234-265), whose body starts `setattr(provider, "pipeline_model_parallel_size", pp)` (:141).

A size counts only where it is read plainly so: the loader is a function of a file under the
checkout's `src/` that the entry imports it from; the setter takes the provider first and
`setattr`s the key from one of its parameters before any `return`, outside any branch, loop or
`try`; the loader calls the setter on every path (config/entry_assign `_surely`'s rule) and hands
it that parameter from one of its own, by keyword or through a `dict(...)` it binds once; every
other write of the key in that file is a parameter handed the same way; the file stores no
attribute by a name not written and passes no `**` it does not spell out. The entry's value is
then the loader's keyword in each of its calls (a literal or `args.DEST`, whose option the entry
or an argparse adder of that file it calls defines). Anything else is UNKNOWN (fail closed).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.config.entry_script import arg_value, argparse_options, local_roots, namespaces, parsed
from auditor.config.entry_stores import opaque_keywords, unnamed_stores
from auditor.config.expr import UNKNOWN
from auditor.config.model import LaunchConfig

Fn = ast.FunctionDef | ast.AsyncFunctionDef
Found = tuple[Any, str, int]  # value, why, the line of the entry's call


def library_sizes(launch: LaunchConfig, script: Path, tree: ast.Module, options: dict[str, dict[str, Any]],
                  keys: list[str]) -> dict[str, Found]:
    """key -> (value, why, where) for each of `keys` a loader of the checkout's `src/` sets (see the
    module docstring); `options` gains the argparse options of the adders the entry calls."""
    out: dict[str, Found] = {}
    imports = library_imports(tree)
    for module, lib, lib_tree in library_trees(script, list(imports)):
        if lib_tree is None:
            continue
        names = imports[module]
        defs = {f.name: f for f in lib_tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        _add_options(tree, names, defs, options)
        if _writes_unnamed(lib_tree):
            continue  # no loader of it sets a key surely, whichever key
        for key in keys:
            for name in dict.fromkeys(names.values()):
                if name in defs and key not in out:
                    bound = [local for local, n in names.items() if n == name]
                    found = _through(launch, tree, bound, defs[name], lib, lib_tree, key, options)
                    if found is not None and _used_only_by_calls(tree, module, tuple(bound)):
                        out[key] = found
                    elif found is not None:
                        out[key] = (UNKNOWN, f"{name}() of {module} is reached other than by a plain call "
                                             f"({lib.name} sets {key} from its arguments)", found[2])
    return out


@functools.lru_cache(maxsize=1024)
def _used_only_by_calls(tree: ast.Module, module: str, bound: tuple[str, ...]) -> bool:
    """The entry reaches the loader only by calling one of the names it imported it as: its module
    is not imported whole (`import M as m; m.load(pp=2)`), and no name of it is passed, assigned
    or wrapped (`functools.partial(load, pp=2)`), which the calls read here would miss."""
    package, _, last = module.rpartition(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == module or module.startswith(a.name + ".")
                                                for a in node.names):
            return False
        if (isinstance(node, ast.ImportFrom) and not node.level and node.module == package
                and any(a.name == last for a in node.names)):
            return False
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return not any(isinstance(n, ast.Name) and n.id in bound and isinstance(n.ctx, ast.Load) and id(n) not in called
                   for n in ast.walk(tree))


def library_imports(tree: ast.Module) -> dict[str, dict[str, str]]:
    """module -> {local name: name} of the entry's absolute `from MODULE import name` lines."""
    out: dict[str, dict[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.setdefault(node.module, {}).update({a.asname or a.name: a.name for a in node.names})
    return out


def library_trees(script: Path, modules: list[str]) -> Iterator[tuple[str, Path, ast.Module | None]]:
    """(module, file, its parse; None where it cannot be read) of each of `modules` that is a
    `src/MODULE.py` of the checkout (`library_file`), in order."""
    for module in modules:
        lib = library_file(script, module)
        if lib is None:
            continue
        try:
            yield module, lib, parsed(lib.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            yield module, lib, None


def library_file(script: Path, module: str) -> Path | None:
    """The one `src/MODULE.py` of a checkout folder above `script`, if any."""
    rel = Path(*module.split(".")).with_suffix(".py")
    found = [r / "src" / rel for r in local_roots(script)
             if (r / "src" / rel).is_file()]
    return found[0] if len(found) == 1 else None


def _add_options(tree: ast.Module, names: dict[str, str], defs: dict[str, Fn],
                 options: dict[str, dict[str, Any]]) -> None:
    """The options of each argparse adder of the library the entry calls; a dest both define is
    left with no known default (which of the two wins is not read)."""
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    abbrev = all(o["abbrev"] for o in options.values())
    parsed_as = namespaces(tree)  # the entry's names of the namespace the adder's options land in
    for local, name in names.items():
        if local not in called or name not in defs:
            continue
        for dest, opt in argparse_options(ast.Module(body=[defs[name]], type_ignores=[])).items():
            if dest in options:
                options[dest]["default"] = ...
            else:
                options[dest] = opt | {"abbrev": abbrev, "namespaces": parsed_as}


def _through(launch: LaunchConfig, tree: ast.Module, bound: list[str], loader: Fn, lib: Path,
             lib_tree: ast.Module, key: str, options: dict[str, dict[str, Any]]) -> Found | None:
    """The value the entry's calls of `loader` (under any of the names `bound` to it) set as `key`;
    None where the loader does not set it plainly, UNKNOWN where the calls do not give one value."""
    param = _loader_param(loader, lib_tree, key)
    if param is None:
        return None
    calls = [n for n in _name_calls(tree) if isinstance(n.func, ast.Name) and n.func.id in bound]
    values = []
    for call in calls:
        local = call.func.id if isinstance(call.func, ast.Name) else loader.name
        given = [k.value for k in call.keywords if k.arg == param]
        if len(given) != 1 or any(k.arg is None for k in call.keywords):
            return UNKNOWN, f"{local}() is called without a plain {param}= ({lib.name} sets {key} from it)", call.lineno
        got = arg_value(given[0], options, launch)
        if got is None:
            return (UNKNOWN, f"{local}({param}={ast.unparse(given[0])}), a value not read statically "
                             f"({lib.name} sets {key} from it)", call.lineno)
        values.append((got, call.lineno))
    if not values or len({repr(v[0][0]) for v in values}) != 1:
        return None if not values else (UNKNOWN, f"{local}() is called with different {param}= values",
                                        values[0][1])
    (value, why), line = values[0]
    return value, (f"{local}({param}={value!r}) ({why}); {lib.name}:{loader.lineno} "
                   f"{loader.name}() sets {key} from {param}"), line


@functools.lru_cache(maxsize=64)
@functools.lru_cache(maxsize=64)
def _name_calls(tree: ast.Module) -> tuple[ast.Call, ...]:
    """The calls of `tree` by a bare name, in walk order (cached on the parse: _through asks for
    each loader and key, in each case a scan judges)."""
    return tuple(n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name))


@functools.lru_cache(maxsize=64)
def _writes_unnamed(lib_tree: ast.Module) -> bool:
    """Whether a function of the module may write any attribute or keyword (a store by a name not
    written, `**` keywords not spelled out): then no loader of it surely sets a key."""
    funcs = [f for f in ast.walk(lib_tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return any(unnamed_stores(list(ast.walk(f))) or opaque_keywords(list(ast.walk(f)), f, lib_tree) for f in funcs)


@functools.lru_cache(maxsize=4096)
def _loader_param(loader: Fn, lib_tree: ast.Module, key: str) -> str | None:
    """The parameter of `loader` its setter surely sets as `key` (see the module docstring), in a
    `lib_tree` of which no function may write any key (_writes_unnamed, asked once per module).
    Cached on the parse (entry_script.parsed gives the same one for the same text, never
    mutated): each case of a setting a scan judges asks again (auditor/scan.py `_cases`)."""
    funcs = [f for f in ast.walk(lib_tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    writes = {f.name: _key_params(f, key) for f in funcs}
    if any(w is None for w in writes.values()) or not any(writes.values()):
        return None  # a write not of a parameter, or none
    setters = [f for f in funcs if writes[f.name] and _sets_first(f, key)]
    handed = set()
    for f in funcs:
        for p in writes[f.name] or []:
            got = _handed(loader, f.name, p)
            if got is None or any(_calls(g, f.name) for g in funcs if g is not loader):
                return None
            handed.add(got)
    if len(handed) != 1 or not any(_surely_calls(loader.body, s.name) for s in setters):
        return None
    return handed.pop()


@functools.lru_cache(maxsize=4096)
def _key_params(f: Fn, key: str) -> tuple[str, ...] | None:
    """The parameters `f` writes as `key` (`setattr(x, "key", p)`, `{"key": p}`, `x.key = p`);
    None where it writes it from anything else (cached, as _loader_param, which asks per loader)."""
    params = {a.arg for a in ast.walk(f.args) if isinstance(a, ast.arg)}
    out = []
    for node in ast.walk(f):
        value: ast.expr | None = None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and len(node.args) == 3 and isinstance(node.args[1], ast.Constant) and node.args[1].value == key):
            value = node.args[2]
        elif isinstance(node, ast.Dict):
            value = next((v for k, v in zip(node.keys, node.values)
                          if isinstance(k, ast.Constant) and k.value == key), None)
        elif isinstance(node, ast.Call) and any(k.arg == key for k in node.keywords):
            return None
        elif isinstance(node, ast.Attribute) and node.attr == key and isinstance(node.ctx, (ast.Store, ast.Del)):
            return None
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            if isinstance(node.slice, ast.Constant) and node.slice.value == key:
                return None
        if value is None:
            continue
        if not (isinstance(value, ast.Name) and value.id in params and not _rebound(f, value.id)):
            return None
        out.append(value.id)
    return tuple(out)


def _rebound(f: Fn, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
               for n in ast.walk(f))


def _sets_first(f: Fn, key: str) -> bool:
    """`f`'s own statements, before any that may return, `setattr` its first parameter's `key`."""
    first = (f.args.posonlyargs + f.args.args)[:1]
    for stmt in f.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "setattr"
                and len(call.args) == 3 and isinstance(call.args[0], ast.Name) and first
                and call.args[0].id == first[0].arg and isinstance(call.args[1], ast.Constant)
                and call.args[1].value == key):
            return True
        if any(isinstance(n, (ast.Return, ast.Raise)) for n in ast.walk(stmt)):
            return False
    return False


def _calls(f: Fn, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def _handed(loader: Fn, callee: str, param: str) -> str | None:
    """The one parameter of `loader` that each of its calls of `callee` hands as `param`, by
    keyword or through a `dict(...)` bound once; None otherwise."""
    own = {a.arg for a in ast.walk(loader.args) if isinstance(a, ast.arg)}
    got = set()
    calls = _calls(loader, callee)
    for call in calls:
        given = [k.value for k in call.keywords if k.arg == param]
        for k in call.keywords:
            if k.arg is None and isinstance(k.value, ast.Name):
                given += _dict_values(loader, k.value.id, param)
        if len(given) != 1 or not isinstance(given[0], ast.Name) or given[0].id not in own or _rebound(loader, given[0].id):
            return None
        got.add(given[0].id)
    return got.pop() if len(got) == 1 else None


def _dict_values(loader: Fn, name: str, param: str) -> list[ast.expr]:
    """The `param` value of the `dict(...)` that `name` is bound to once in `loader`."""
    binds = [n for n in ast.walk(loader) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, (ast.Store, ast.Del))]
    assigns = [n.value for n in ast.walk(loader) if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    if len(binds) != 1 or len(assigns) != 1:
        return []
    value = assigns[0]
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict"
            and not value.args):
        return [k.value for k in value.keywords if k.arg == param]
    return []


def _surely_calls(body: list[ast.stmt], name: str) -> bool:
    """Whether running `body` surely calls `name` as a statement before it may return: on every
    branch of an `if` (a branch that calls it may return after), not in a loop or `try`."""
    for stmt in body:
        if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name)
                and stmt.value.func.id == name):
            return True
        if isinstance(stmt, ast.If):
            sure = [_surely_calls(stmt.body, name), _surely_calls(stmt.orelse, name)]
            if all(sure):
                return True
            if any(not s and _returns(b) for s, b in zip(sure, (stmt.body, stmt.orelse))):
                return False
        elif _returns([stmt]):
            return False
    return False


def _returns(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Return) for stmt in body for n in ast.walk(stmt))
