"""What a training script's own code states, read with the stdlib `ast`, never run: the local
modules it imports, its argparse options, and the value each call of a named constructor passes
for one parameter (`PipelineModule(num_stages=args.pipeline_parallel_size)`,
`nl.MegatronStrategy(pipeline_model_parallel_size=args.pp_size)`): a literal, or `args.DEST`,
the flag the launch script gives, else the argparse default. A rules file says which calls count
(`[[script_call]]`); what no literal, argparse default or given flag gives stays unknown.
Readers: config/deepspeed_entry.py (`deepspeed SCRIPT`), config/lightning_entry.py (`python
SCRIPT` building a Lightning strategy), config/pipelining_script.py (torch's own pipelining).
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from auditor.config.entry_stores import unnamed_stores
from auditor.config.expr import UNKNOWN
from auditor.config.model import Flag, LaunchConfig

# How far above the script a local package (`from dschat.utils import ...`) is looked for, and
# how many local modules are read at most.
ANCESTORS = 4
MAX_MODULES = 400
_TYPES = {"int": int, "float": float, "str": str}


def put_calls(launch: LaunchConfig, specs: list[dict[str, Any]], tree: ast.Module, path: str) -> None:
    """What the script's calls state for each `[[script_call]]` of `specs`, into
    `launch.entry_values` with its `file:line` (a call whose value is not known puts nothing)."""
    options = argparse_options(tree)
    for spec in specs:
        found = call_value(tree, spec, options, launch)
        if found is not None:
            value, why, line = found
            launch.entry_values[spec["key"]] = (value, f"{path}:{line}: {why}", f"{path}:{line}")


@functools.lru_cache(maxsize=128)
def parsed(text: str) -> ast.Module:
    """An entry script's or a local module's text parsed once (every reader of the launch asks for
    it; a scan reads the launch once per release and per setting's case it judges on, and the
    readers cache what they find on the parse: config/entry_assign.py); callers never mutate the
    tree."""
    return ast.parse(text)


def local_roots(script: Path) -> list[Path]:
    """The folders an absolute import of `script`'s own code is looked up in: its folder and up
    to `ANCESTORS` above it (a package of a directory above: Pai's examples/llama/x.py importing
    megatron_patch from the checkout root)."""
    return [script.parent, *list(script.parent.parents)[:ANCESTORS]]


def iter_closure(script: Path, stop: frozenset[str] = frozenset(),
                 before: int = 0) -> Iterator[tuple[Path, ast.Module]]:
    """The script and every module it imports that lies beside it or in a package of a directory
    above it (up to `ANCESTORS`), transitively -- the training code its authors wrote -- one at a
    time, the script first (at most MAX_MODULES), for a reader that can stop at the first module
    that answers its question; an absolute import of a package in `stop` is not followed. With
    `before`, of the script's own imports only those above that line are followed: what may
    have loaded when it runs."""
    roots = local_roots(script)
    seen: set[Path] = set()
    todo = [script]
    while todo and len(seen) < MAX_MODULES:
        path = todo.pop()
        if path in seen:
            continue
        text = path.read_text(encoding="utf-8")
        tree = parsed(text)
        seen.add(path)
        yield path, tree
        for where, name in _imported(tree, path, before if path == script else 0):
            if where is None and name.split(".")[0] in stop:
                continue
            todo.extend(p for p in _resolve(name, [where] if where else [path.parent, *roots]) if p not in seen)


def foreign_imports(tree: ast.Module, path: Path, script: Path) -> list[str]:
    """The absolute imports of `path` (a module of `script`'s iter_closure) that no local file
    gives: third-party packages or the standard library."""
    roots = [path.parent, *local_roots(script)]

    def local(name: str) -> bool:  # a local file, or a bare local namespace package (runs nothing)
        return bool(_resolve(name, roots)) or ("." not in name and any((r / name).is_dir() for r in roots))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if not local(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and not local(node.module):
            out.append(node.module)
    return out


def _imported(tree: ast.Module, path: Path, before: int = 0) -> Iterator[tuple[Path | None, str]]:
    """(directory, dotted name) of each module the file imports (on lines above `before`, where
    given): a relative import is looked up in its package's directory only, an absolute one
    (None) from the roots."""
    for node in ast.walk(tree):
        if before and isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno >= before:
            continue
        if isinstance(node, ast.Import):
            yield from ((None, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            where = path.parents[node.level - 1] if node.level else None
            base = node.module or ""
            if base:
                yield where, base
            yield from ((where, f"{base}.{a.name}" if base else a.name) for a in node.names)


def _resolve(name: str, roots: list[Path]) -> list[Path]:
    """The files of `name` (and its packages' __init__.py) under the first root that has it."""
    if not name:
        return []
    parts = name.split(".")
    for root in roots:
        if not ((root / parts[0]).is_dir() or (root / f"{parts[0]}.py").is_file()):
            continue
        files = []
        for n in range(1, len(parts) + 1):
            base = root.joinpath(*parts[:n])
            if (base / "__init__.py").is_file():
                files.append(base / "__init__.py")
            elif base.with_suffix(".py").is_file():
                files.append(base.with_suffix(".py"))
                break
        return files
    return []


def is_main_guard(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":`, either way round: the block that runs when the file is the
    program and not when it is imported (`!=` is the other way and is not one)."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    return {ast.unparse(test.left), ast.unparse(test.comparators[0])} == {"__name__", "'__main__'"}


def dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def handler_types(handler: ast.ExceptHandler) -> set[str]:
    """The exception types an `except` names, as written (`dotted`; none for a bare `except:`)."""
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {dotted(k) for k in kinds if k is not None}


def path_value(node: ast.expr, module: Path, names: dict[str, ast.expr] | None = None) -> Path | None:
    """A path expression's value where known statically, built from `__file__` (`module`):
    `os.path` dirname/abspath/realpath/normpath/join (string literals and `os.pardir` joined in),
    `Path(...)`, `.parent`, `.parents[n]`, `/ "x"`, `.resolve()`/`.absolute()`, absolute string
    literals, and module-level `names` where given (a name's assigned expression, popped: a name
    defined through itself is not known); None for anything else. A relative value (`os.pardir`
    alone) is returned as such: where the run starts is the caller's question. The one reader of
    sys.path folders (config/entry_imports.py script_roots, config/deepspeed_engine.py)."""
    if isinstance(node, ast.Name) and node.id == "__file__":
        return module
    if isinstance(node, ast.Name):
        value = names.pop(node.id, None) if names is not None else None
        return None if value is None else path_value(value, module, names)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return Path(node.value) if os.path.isabs(node.value) else None
    if isinstance(node, ast.Attribute) and node.attr == "pardir" and dotted(node.value) in ("os", "os.path"):
        return Path("..")
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = path_value(node.value, module, names)
        return None if inner is None else inner.parent
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents" \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
        inner = path_value(node.value.value, module, names)
        return None if inner is None or node.slice.value >= len(inner.parents) else inner.parents[node.slice.value]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
            and isinstance(node.right.value, str):
        inner = path_value(node.left, module, names)
        return None if inner is None else Path(os.path.normpath(inner / node.right.value))
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    called = dotted(node.func)
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "absolute") and not node.args:
        inner = path_value(node.func.value, module, names)
        return None if inner is None else Path(os.path.normpath(inner))
    args = [Path(a.value) if called == "os.path.join" and isinstance(a, ast.Constant) and isinstance(a.value, str)
            else path_value(a, module, None if names is None else dict(names)) for a in node.args]
    if not args or any(a is None for a in args):
        return None
    paths = [a for a in args if a is not None]
    if called == "os.path.dirname" and len(paths) == 1:
        return paths[0].parent
    if called in ("os.path.abspath", "os.path.realpath", "os.path.normpath", "str", "Path", "pathlib.Path") \
            and len(paths) == 1:
        return Path(os.path.normpath(paths[0]))
    if called == "os.path.join":
        return Path(os.path.normpath(Path(*paths)))
    return None


def aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it was imported as (`PipelineModule` ->
    `deepspeed.pipe.PipelineModule`, `deepspeed` -> `deepspeed`)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def names(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted name: the file's import aliases and the names bound once to one (a
    copy the caller may change)."""
    return dict(_names(tree))


@functools.lru_cache(maxsize=256)
def _names(tree: ast.Module) -> dict[str, str]:
    """names(), once per parse (`parsed` trees are shared, and through_local asks a local
    module's names once per name it resolves there: seconds on Megatron-LM's multimodal entry)."""
    imported = aliases(tree)
    imported.update(_bound_once(tree, imported))
    return imported


def star_names(tree: ast.Module, path: Path) -> dict[str, str]:
    """Local name -> dotted name for the names `from launch_utils import *` binds, where
    launch_utils is a local module beside the file at `path` (or in a package above): its public
    names() bindings (`import subprocess as sp` gives sp), only those of a literal `__all__` where
    it has one (review r41-interp 3). A later star import wins, as when the file runs."""
    roots = local_roots(path)
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module and not node.level
                and any(a.name == "*" for a in node.names)):
            continue
        files = _resolve(node.module, roots)
        if not files or len(files) != len(node.module.split(".")):
            continue
        try:
            module = parsed(files[-1].read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            continue
        public = _literal_all(module)
        out.update({k: v for k, v in names(module).items()
                    if (k in public if public is not None else not k.startswith("_"))})
    return out


def _literal_all(module: ast.Module) -> set[str] | None:
    """The module's `__all__` where it is one literal list or tuple of strings; else None."""
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets) \
                and isinstance(stmt.value, (ast.List, ast.Tuple)) \
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in stmt.value.elts):
            return {e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None


def through_local(imported: str, path: Path) -> str:
    """`imported` (a dotted name as the file at `path` imports it) with a name a local module binds
    read as what that module binds it to: `launch_utils.sp.run` is `subprocess.run` where
    launch_utils.py beside (or in a package above) has `import subprocess as sp` or `sp = subprocess`,
    whether or not it reads `sp` itself (review r40-holes 2); else `imported` unchanged."""
    roots = local_roots(path)
    for _ in range(4):  # a module giving another local module's name on
        parts = imported.split(".")
        files = _resolve(".".join(parts[:-1]), roots)
        if not files or len(files) >= len(parts) or files[-1].suffix != ".py":
            return imported
        try:
            given = names(parsed(files[-1].read_text(encoding="utf-8"))).get(parts[len(files)])
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            return imported
        if given is None:
            return imported
        imported = ".".join([given, *parts[len(files) + 1:]])
    return imported


def _bound_once(tree: ast.Module, imported: dict[str, str]) -> dict[str, str]:
    """Local name -> dotted name, for a name the file binds once, by a plain assignment of an
    imported name or an attribute of one (`run = subprocess.run`): calling it calls that. A name
    bound more than once (or also imported, a parameter, a loop target) may hold anything."""
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            stores[node.arg] = stores.get(node.arg, 0) + 2
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, dotted(node.value)
        head, _, rest = value.partition(".")
        if head in imported and name not in imported and stores.get(name) == 1:
            out[name] = imported[head] + (f".{rest}" if rest else "")
    return out


def argparse_options(tree: ast.Module) -> dict[str, dict[str, Any]]:
    """dest -> {spellings, type, default, abbrev, stored} of the file's `add_argument` calls.
    `default` is `...` where no literal gives it or `set_defaults` may change it; `abbrev`:
    argparse may take a prefix of a long spelling for it (allow_abbrev, True unless every parser
    of the file turns it off); `stored`: the line of a store the file makes to the parsed value
    (`args.pp = ...`, a setattr or `vars(args)` store by a name not written), which the flag
    and default do not decide (config/entry_stores.py), else 0."""
    out: dict[str, dict[str, Any]] = {}
    nodes = list(ast.walk(tree))
    parsers = [n for n in nodes if isinstance(n, ast.Call) and dotted(n.func).endswith("ArgumentParser")]
    abbrev = not parsers or not all(any(k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant)
                                        and k.value.value is False for k in p.keywords) for p in parsers)
    defaults = [k.arg for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == "set_defaults" for k in n.keywords]
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        spellings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not spellings or not all(s.startswith("-") for s in spellings):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        long = next((s for s in spellings if s.startswith("--")), spellings[0])
        dest, kind, default = kw.get("dest"), kw.get("type"), kw.get("default")
        name = str(dest.value) if isinstance(dest, ast.Constant) else long.lstrip("-").replace("-", "_")
        if name in out:  # another option for the same dest: argparse takes either spelling
            first = out[name]
            first["spellings"] = [*first["spellings"], *spellings]
            if first["type"] != (kind.id if isinstance(kind, ast.Name) else "str"):
                first["type"] = "?"  # the value converts as the spelling given says: not read
            continue
        out[name] = {
            "spellings": spellings,
            "type": kind.id if isinstance(kind, ast.Name) else "str",
            # `...`: a default that is no literal, not known statically
            "default": (... if name in defaults or None in defaults else
                        default.value if isinstance(default, ast.Constant) else (None if default is None else ...)),
            "abbrev": abbrev,
            "stored": 0,
        }
    for stored, line in stores_of(tree, out).items():
        out[stored]["stored"] = line
    parsed_as = namespaces(tree)
    for opt in out.values():
        opt["namespaces"] = parsed_as
    return out


_PARSES = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args"})


def namespaces(tree: ast.Module) -> frozenset[str]:
    """The names the file binds to its parsed argparse namespace: only their attributes are the
    options (`arg_value`; `cfg.megatron_path` of a config object is no `--megatron-path`, review
    r39-bridge). A name assigned `parser.parse_args()` (or the first of `parse_known_args()`),
    the result of a local function returning one, or a local function's parameter some call
    hands one, by name only. A name also bound to anything else in a scope it holds the namespace in
    (`args = SimpleNamespace(**json.load(f))`, a call handing that parameter another value, a
    loop or `with` target) is none: which object a read of it sees is not read (review r40-holes)."""
    defs = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    by_name = {f.name: f for f in defs}
    scope = _Scopes(tree)
    found: set[str] = set()
    homes: dict[str, set[ast.AST]] = {}  # name -> the scopes (module, function) it holds the namespace in
    returning: set[str] = set()
    other: set[str] = set()  # names bound to something else too
    other_defs: set[str] = set()  # functions some `return` of which gives something else

    def parsed(value: ast.expr | None, first: bool = False) -> bool:
        if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and value.slice.value == 0:
            return parsed(value.value, True)
        if isinstance(value, ast.Name):
            return value.id in found and value.id not in other
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in _PARSES:  # `namespace=cfg` fills cfg: no defaults
            return (first or func.attr in ("parse_args", "parse_intermixed_args")) and len(value.args) < 2 \
                and not any(k.arg in ("namespace", None) for k in value.keywords)
        return isinstance(func, ast.Name) and func.id in returning and func.id not in other_defs

    def home(name: str, where: ast.AST) -> None:
        found.add(name)
        homes.setdefault(name, set()).add(where)

    def bind(target: ast.expr, value: ast.expr | None, node: ast.AST) -> None:
        if isinstance(target, ast.Name) and parsed(value):
            home(target.id, scope.home(node, target.id))
        elif isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name) \
                and parsed(value, True):
            home(target.elts[0].id, scope.home(node, target.elts[0].id))  # `args, rest = parse_known_args()`

    def walk(settled: bool) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    bind(target, node.value, node)
            elif isinstance(node, ast.AnnAssign):
                bind(node.target, node.value, node)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in by_name:
                define = by_name[node.func.id]
                positional = [*define.args.posonlyargs, *define.args.args]
                given = [*zip(positional, node.args), *((p, k.value) for k in node.keywords if k.arg
                                                        for p in [*positional, *define.args.kwonlyargs]
                                                        if p.arg == k.arg)]
                for p, a in given:
                    if parsed(a):
                        home(p.arg, define)
                if settled:
                    other.update(p.arg for p, a in given if not isinstance(a, ast.Starred) and not parsed(a)
                                 and define in homes.get(p.arg, ()))
        returns = [(f, n) for f in defs for n in ast.walk(f) if isinstance(n, ast.Return) and scope.of[n] is f]
        returning.update(f.name for f, n in returns if parsed(n.value))
        if settled:  # a function returning the namespace on one path and a config on another is neither
            other_defs.update(f.name for f, n in returns if not parsed(n.value))
            other.update(_bound_otherwise(tree, homes, parsed, scope))

    for settled in (False, True):  # every name given a namespace somewhere, then those given another value too
        size = -1
        while size != len(found) + len(returning) + len(other) + len(other_defs):
            size = len(found) + len(returning) + len(other) + len(other_defs)
            walk(settled)
    return frozenset(found - other)


_SCOPE_NODES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


class _Scopes:
    """Each node's enclosing module, function, lambda or class (a comprehension is none: its
    loop variables are read apart, a walrus in it binds the enclosing function's name)."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.of: dict[ast.AST, ast.AST] = {tree: tree}
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            inner = node if isinstance(node, _SCOPE_NODES) else self.of[node]
            for child in ast.iter_child_nodes(node):
                self.of[child] = inner
                stack.append(child)
        self.declared = {(self.of[n], name): isinstance(n, ast.Global)
                         for n in ast.walk(tree) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}

    def home(self, node: ast.AST, name: str) -> ast.AST:
        """The scope a binding of `name` at `node` binds it in: the module for a `global` name."""
        where = self.of[node]
        return self.tree if self.declared.get((where, name)) else where


def _bound_otherwise(tree: ast.Module, homes: dict[str, set[ast.AST]], parsed: Callable[..., bool],
                     scope: _Scopes) -> set[str]:
    """The names of `homes` some statement binds, in a scope the name holds the namespace in, to a
    value `parsed` does not take for the namespace: a plain or annotated assignment of another
    value, an augmented one, a loop, `with`, `except`, import, `def` or `class` binding, a `del`;
    parameters are read at the calls. An unrelated function's own `args = get_args()` and a
    comprehension's loop variable bind another name (review r41-interp 2); a `nonlocal` one counts."""
    bound: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and node.value is None:
            continue  # `args: Namespace`: a declaration binds nothing
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and not parsed(node.value):
                    bound.append((node, target.id))
                elif isinstance(target, (ast.Tuple, ast.List)):
                    first = parsed(node.value, True)
                    bound.extend((node, n.id) for i, e in enumerate(target.elts) for n in ast.walk(e)
                                 if isinstance(n, ast.Name) and (i or not first or not isinstance(e, ast.Name)))
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr, ast.withitem, ast.Delete)):
            targets_of: list[ast.expr | None] = (list(node.targets) if isinstance(node, ast.Delete) else
                                                 [node.optional_vars] if isinstance(node, ast.withitem) else
                                                 [node.target])
            bound.extend((node, n.id) for t in targets_of if t is not None for n in ast.walk(t)
                         if isinstance(n, ast.Name))
        elif isinstance(node, (ast.ExceptHandler, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.extend([(node, node.name)] if node.name else [])
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.extend((node, (a.asname or a.name).split(".")[0]) for a in node.names)
    return {name for node, name in bound if name in homes
            and (scope.home(node, name) in homes[name] or scope.declared.get((scope.of[node], name)) is False)}


def binding_count(tree: ast.Module, name: str) -> int:
    """How many places of `tree` bind `name` (a store or del, a parameter, an import, a def or class,
    a `global`/`nonlocal` declaration, counted twice: the name is bound elsewhere too; a pattern
    capture, an `except ... as`): what a reader that takes one assignment as its value checks."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            count += 1
        elif isinstance(node, ast.arg) and node.arg == name:
            count += 1
        elif isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            count += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            count += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            count += 2
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
            count += 1
        elif isinstance(node, ast.MatchMapping) and node.rest == name:
            count += 1
        elif isinstance(node, ast.ExceptHandler) and node.name == name:
            count += 1
    return count


def stores_of(tree: ast.Module, options: dict[str, dict[str, Any]]) -> dict[str, int]:
    """dest -> the first line of `tree` storing into that parsed argparse value (an attribute of
    its name, or a store by a name not written: config/entry_stores.py)."""
    nodes = list(ast.walk(tree))
    unnamed = unnamed_stores(nodes)
    out = {}
    for dest in options:
        lines = [*unnamed, *(n.lineno for n in nodes if isinstance(n, ast.Attribute) and n.attr == dest
                             and isinstance(n.ctx, (ast.Store, ast.Del)))]
        if lines:
            out[dest] = min(lines)
    return out


def calls(tree: ast.Module) -> Iterator[tuple[ast.Call, str, str]]:
    """Every call in the file: the node, the callee as written (`nl.MegatronStrategy`) and as
    imported (`nemo.lightning.MegatronStrategy`, through the file's import aliases and the names
    bound once to one: `run = subprocess.run`, `sp = subprocess`)."""
    imported = names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            written = dotted(node.func)
            head, _, rest = written.partition(".")
            yield node, written, imported.get(head, head) + (f".{rest}" if rest else "")


def call_value(tree: ast.Module, spec: dict[str, Any], options: dict[str, dict[str, Any]],
               launch: LaunchConfig) -> tuple[Any, str, int] | None:
    """The value every call of `spec["callee"]` in the script passes as `spec["param"]` (by
    keyword, or at `position` where the parameter is not keyword-only), with why; None where
    there is no call, calls disagree, or a value is not known statically. A call that leaves it
    out states the callee's `default` where the rule gives one, UNKNOWN where the callee decides
    it at run time (`unset = "unknown"`), else None."""
    found: list[tuple[Any, str, int]] = []
    position = spec.get("position")
    for node, written, callee in calls(tree):
        if callee not in spec["callee"]:
            continue
        arg = next((k.value for k in node.keywords if k.arg == spec["param"]), None)
        starred = any(isinstance(a, ast.Starred) for a in node.args)
        if arg is None and position is not None and len(node.args) > position and not starred:
            arg = node.args[position]
        if arg is None:
            if any(k.arg is None for k in node.keywords) or starred:
                return None  # **kwargs or *args may pass it
            found.append(_left_out(spec, written, node.lineno))
            continue
        value = arg_value(arg, options, launch)
        if value is None:
            return None
        found.append((value[0], f"{written}({spec['param']}={ast.unparse(arg)}) = {value[0]!r} ({value[1]})",
                      node.lineno))
    if not found or len({repr(v) for v, _, _ in found}) != 1:
        return None
    return found[0]


def _left_out(spec: dict[str, Any], written: str, line: int) -> tuple[Any, str, int]:
    """What a call that leaves the parameter out states (see call_value)."""
    said = f"{written}(...) leaves {spec['param']} out"
    if "default" in spec:
        return spec["default"], f"{said}: its default {spec['default']!r} ({spec['source']}: `{spec['code']}`)", line
    if spec.get("unset") == "unknown":
        return UNKNOWN, f"{said}: {spec.get('about', 'the callee decides it at run time')}", line
    return None, said, line


def arg_value(node: ast.expr, options: dict[str, dict[str, Any]], launch: LaunchConfig) -> tuple[Any, str] | None:
    """A literal, or `args.DEST` of the script's argparse (`args` a name of its parsed namespace,
    `namespaces`): the flag the launch script gives, else the argument's default."""
    if isinstance(node, ast.Constant):
        return node.value, "a literal"
    if isinstance(node, (ast.List, ast.Tuple)):  # Trainer(devices=[0, 1]): device indices
        items = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        return (items, "a literal") if len(items) == len(node.elts) else None
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)) or node.attr not in options:
        return None
    opt = options[node.attr]
    if node.value.id not in opt.get("namespaces", ()):
        return None  # an attribute of another object (`cfg.megatron_path`), not the parsed option
    convert = _TYPES.get(opt["type"])
    if opt.get("stored"):
        return None  # the file stores another value into it
    given = _given(opt, options, launch)
    if given is None:
        return None
    flag = given[0] if given else None
    if launch.unknown_words and (flag is None or flag.name not in launch.unknown_words[-1].after):
        return None  # a word not known statically may give it (config.flags.open_settings' rule)
    if flag is not None:
        if not isinstance(flag.value, str) or convert is None:
            return None
        try:
            return convert(flag.value), f"{flag.spelling} {flag.value}, {launch.path}:{flag.line}"
        except ValueError:
            return None
    if opt["default"] is ... or (opt["default"] is not None and convert is not None
                                 and not isinstance(opt["default"], convert)):
        return None
    return opt["default"], f"the default of {opt['spellings'][-1]}, not given"


def _given(opt: dict[str, Any], options: dict[str, dict[str, Any]], launch: LaunchConfig) -> list[Flag] | None:
    """The flag of the launch line that gives option `opt` ([] for none): one of its spellings,
    or where argparse abbreviates, a long flag no option spells that begins one of its long
    spellings. None where several flags may give it or the abbreviation begins another option's
    spelling too (argparse rejects it as ambiguous)."""
    spelled = {s for o in options.values() for s in o["spellings"]}
    longs = [s for s in opt["spellings"] if s.startswith("--")]
    found = [f for f in launch.flags.values() if f.spelling in opt["spellings"] or (
        opt.get("abbrev", True) and f.spelling.startswith("--") and f.spelling not in spelled
        and any(s.startswith(f.spelling) for s in longs))]
    if len(found) > 1:
        return None
    if found and found[0].spelling not in opt["spellings"] and any(
            s.startswith(found[0].spelling) for o in options.values() if o is not opt for s in o["spellings"]):
        return None
    return found


def uses_modules(tree: ast.Module, modules: list[str], names: list[str]) -> bool:
    """The file imports one of `modules` (a framework's pipeline modules), or names one of
    `names` (its pipeline classes)."""
    def pipe(mod: str) -> bool:
        return any(mod == m or mod.startswith(f"{m}.") for m in modules)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(pipe(a.name) for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module and (
                pipe(node.module) or any(pipe(f"{node.module}.{a.name}") for a in node.names)):
            return True
        if isinstance(node, ast.Attribute) and (pipe(dotted(node)) or node.attr in names):
            return True
        if isinstance(node, ast.Name) and node.id in names:
            return True
    return False


def uses_or_imports(tree: ast.Module, modules: list[str], names: list[str]) -> bool:
    """`uses_modules`, or the file imports one of `names` by name (`from transformers import
    Trainer`, `from torch.distributed import send`), which it may then use under another name."""
    return uses_modules(tree, modules, names) or any(
        isinstance(node, ast.ImportFrom) and any(a.name in names for a in node.names) for node in ast.walk(tree))
