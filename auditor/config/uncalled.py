"""The module-level functions of an entry's closure that nothing can call: code inside them never
runs, so what it would load or start (`subprocess.Popen(cmd, shell=True)`) is no unread code of
the run.

DeepSpeedExamples (83757d9c93) training/data_efficiency/vit_finetuning/utils/utils.py:34-41
defines `run_cmd`, which starts a shell command; main_cifar.py:33 imports it and never calls it.

A function counts as uncalled only where it has no decorator (one may register it) and, across
every module the closure reads and the launch line's words, nothing spells its name (a name, an
attribute, a string or its last dotted part (`'utils.run_cmd'`), but the entries of an `__all__`,
the original of a name imported under another) and nothing looks up its module's namespace by a
name not written: `globals()`/`locals()`/`vars()` or a call that reads its caller's namespace
(`fire.Fire()`: rules/stacks.toml `caller_namespace`) in its own file (which also reach what that
file imports), `X.__dict__`, `vars(X)`, `getattr(X, name)` of X its module (by an import of it,
or any value where a name is spelled like the module or a package holding it: the module may be
passed around; `pkg.mod` needs its package's name), the module itself used as a value (passed to
any call: `inspect.getmembers(m)`, `operator.attrgetter(name)(m)`, `fire.Fire(m)`; bound to
another name), and never `sys.modules`, `__import__` or a frame (`frame_access`: any caller's
globals). Else it may run, and stays read.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

_OWN = frozenset({"globals", "locals", "vars"})  # without arguments: the file's own namespace


@dataclass
class _Lookups:
    """What the closure spells, and which module namespaces it looks up by a name not written."""

    spelled: set[str] = field(default_factory=set)
    named: set[str] = field(default_factory=set)  # the names (not attributes, strings) used
    modules: set[str] = field(default_factory=set)  # by the module's last name
    files: set[Path] = field(default_factory=set)  # by globals() in the file itself
    values: bool = False  # a lookup on a value that may be any module a name of `named` is bound to
    anything: bool = False  # sys.modules, __import__: any module


@dataclass(frozen=True)
class Readers:
    """The calls that look up a namespace by names not written (rules/stacks.toml [no_pipeline])."""

    caller: frozenset[str] = frozenset()  # without a component: the calling file's namespace
    frames: frozenset[str] = frozenset()  # a frame: any module's namespace


def uncalled(closure: list[tuple[Path, ast.Module]], words: frozenset[str] = frozenset(),
             readers: Readers = Readers()) -> dict[Path, frozenset[str]]:
    """For each module of `closure`, the names of its module-level functions nothing calls;
    `words`: the launch line's, which a lookup by a name not written may take."""
    seen = _Lookups()
    seen.spelled |= {_last(w) for w in words} | set(words)
    for module, tree in closure:
        _read(tree, module, seen, readers)
    if seen.anything:
        return {}
    out: dict[Path, frozenset[str]] = {}
    for module, tree in closure:
        names = _names(module)
        if module in seen.files or names & seen.modules or seen.values and names & seen.named:
            continue  # its namespace, or a package's that may re-export it, is looked up by name
        dead = frozenset(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                         and not n.decorator_list and n.name not in seen.spelled)
        if dead:
            out[module] = dead
    return out


def without(tree: ast.Module, names: frozenset[str]) -> ast.Module:
    """`tree` without the module-level functions `names`."""
    if not names:
        return tree
    kept = copy.copy(tree)
    kept.body = [n for n in tree.body if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                              and n.name in names)]
    return kept


def _names(module: Path) -> set[str]:
    """The names the module's namespace is reached by: its own, its folder's (a package that may
    re-export it), and each enclosing package's."""
    out = {module.stem, module.parent.name}
    for parent in module.parents:
        if not (parent / "__init__.py").is_file():
            break
        out.add(parent.name)
    return out - {"__init__", ""}


def _last(text: str) -> str:
    """The last dotted (or `module:name`) part of `text`: the name a dotted lookup ends on."""
    return re.split(r"[.:]", text)[-1]


def _read(tree: ast.Module, module: Path, seen: _Lookups, readers: Readers) -> None:
    listed = {id(e) for n in ast.walk(tree) if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
              and isinstance(n.value, ast.List | ast.Tuple) for e in n.value.elts}
    imports, aliases = _imported_modules(tree), _aliases(tree)
    values = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name | ast.Attribute) and isinstance(n.ctx, ast.Load) and id(n) not in values:
            _used_as_value(n, imports, seen)
        if isinstance(n, ast.Name):
            seen.spelled.add(n.id)
            seen.named.add(n.id)
        elif isinstance(n, ast.Attribute):
            seen.spelled.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in listed:
            seen.spelled |= {n.value, _last(n.value)}
        elif isinstance(n, ast.alias) and n.asname and n.asname != n.name:
            seen.spelled.add(n.name.split(".")[-1])  # `from m import f as g`: f is called as g
        target: ast.expr | None = None
        if isinstance(n, ast.Attribute) and n.attr == "modules" and isinstance(n.value, ast.Name) \
                and n.value.id == "sys":
            seen.anything = True
        elif isinstance(n, ast.Attribute) and n.attr in ("__dict__", "__getattribute__"):
            target = n.value
        elif isinstance(n, ast.Call) and _qualified(n.func, aliases) in readers.frames:
            seen.anything = True
        elif isinstance(n, ast.Call) and _qualified(n.func, aliases) in readers.caller \
                and not n.args and not any(k.arg in (None, "component") for k in n.keywords):
            _own_namespace(tree, module, seen)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            if n.func.id == "__import__":
                seen.anything = True
            elif n.func.id in _OWN and not n.args:
                _own_namespace(tree, module, seen)
            elif n.func.id == "vars" or n.func.id == "getattr" and not (
                    len(n.args) >= 2 and isinstance(n.args[1], ast.Constant)):
                target = n.args[0] if n.args else None
        if target is None:
            continue
        if isinstance(target, ast.Name) and target.id in imports:
            seen.modules.add(imports[target.id])
        else:
            seen.values = True


def _own_namespace(tree: ast.Module, module: Path, seen: _Lookups) -> None:
    """The file's namespace looked up by any name: its functions and what it imports."""
    seen.files.add(module)
    seen.spelled |= {a.name.split(".")[-1] for i in ast.walk(tree) if isinstance(i, ast.ImportFrom) for a in i.names}


def _used_as_value(node: ast.Name | ast.Attribute, imports: dict[str, str], seen: _Lookups) -> None:
    """A name or attribute chain read whole (not the object of a further attribute) that may be a
    module: where it starts at an imported name, the module it may be escapes (any callee may
    look names up in it), so its last name's namespace counts as looked up (an alias of it,
    `m = utils.utils`, is such a use of the original)."""
    root: ast.expr = node
    while isinstance(root, ast.Attribute):
        root = root.value
    if isinstance(root, ast.Name) and root.id in imports:
        seen.modules.add(node.attr if isinstance(node, ast.Attribute) else imports[root.id])


def _aliases(tree: ast.Module) -> dict[str, str]:
    """name -> what the file's imports bind it to (`from fire import Fire as F`: F -> fire.Fire)."""
    out: dict[str, str] = {}
    for i in ast.walk(tree):
        if isinstance(i, ast.ImportFrom) and i.module and not i.level:
            out.update((a.asname or a.name, f"{i.module}.{a.name}") for a in i.names)
        elif isinstance(i, ast.Import):
            out.update((a.asname, a.name) for a in i.names if a.asname)
    return out


def _qualified(func: ast.expr, aliases: dict[str, str]) -> str:
    """The dotted name a call's callee is written as, its first name read through the file's
    imports (`aliases`); "" where it is no dotted name."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return ""
    return ".".join([aliases.get(func.id, func.id), *parts])


def _imported_modules(tree: ast.Module) -> dict[str, str]:
    """name -> the last name of what it is bound to, for the names the file binds only by
    `import a.b as name` or `from a import b as name` (b may be a module)."""
    bound: dict[str, str | None] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import | ast.ImportFrom):
            for a in n.names:
                name = a.asname or a.name.split(".")[0]
                last = a.name.split(".")[-1] if a.asname or isinstance(n, ast.ImportFrom) else name
                bound[name] = last if bound.get(name, last) == last else None
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            bound[n.id] = None
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound[n.name] = None
    return {k: v for k, v in bound.items() if v is not None}
