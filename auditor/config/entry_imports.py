"""Whether the modules a training script imports on start-up can be found, as Python finds them
(issue 22: a run that cannot start).

`python nemo/collections/diffusion/vae/train_vae.py` (NVIDIA/NeMo@8cfedd7203, :37) imports
`nemo.collections.diffusion.train`, which the checkout no longer holds. Whether that stops the
run depends on which copy of `nemo` Python imports. sys.path, for `python SCRIPT` (and torchrun,
srun, deepspeed running a script path), is the script's directory first, then each PYTHONPATH
entry, then the installed packages. The first of these known roots that holds the top-level
package as a regular package (an `__init__.py`) or a module is the copy every import of it reads;
a submodule that copy lacks (no `b.py`, `b/`, compiled `b.*.so`, nor any file `b.*` a build may
turn into one) raises ModuleNotFoundError on every rank: the run does not start. That is certain
only where nothing may come first: an unknown PYTHONPATH entry before the root, a namespace
portion, a package `__init__` that edits `__path__` or `sys.modules`, or the script's own
`sys.path.insert` before the import each leave it open, and then nothing is said.

The script's own `sys.path.insert(0, X)`, X a folder known from `__file__` (through module-level
names too), puts X before all of these (before PYTHONPATH too), where no earlier import names a
package X holds or a module beside the script (which may import the package first, from another
copy that then stays cached).

Where no known root holds the package as a regular one but the checkout the script sits in does
(its own package, `nemo/` of the NeMo checkout, or a namespace folder: Megatron-LM's megatron/),
the run imports an installed copy this audit did not read (a release, or the checkout itself
through `pip install -e .`): a submodule the checkout lacks is an undecided start-up check, never
DOES NOT START. Where the run itself puts the checkout on sys.path (the script's own
`sys.path.append(<the tree's root>)`, NVIDIA/Megatron-LM@d98e8a64dd examples/multimodal/
run_text_generation.py:11; a namespace folder on a known root) it means to import that copy:
an installed `megatron` may still come first, so the verdict is undecided (INCONCLUSIVE naming
the import), never CLEAN on code not read; so too where the folder it adds is not known here.
Unless no installed copy can hold it: megatron is a namespace package in every wheel, whose
portions (rules `[namespace_portions]`: megatron/core, megatron/training, ...) never hold
megatron/inference, so `megatron.inference.text_generation` (:26) comes from the tree or from
nowhere, and the tree lacks it: DOES NOT START (`_only_copy`). A folder holding setup.py or
pyproject.toml (a submodule checkout: apex/) is no namespace copy.

Only imports that run on every start are read: the module-level `import`/`from ... import`
statements of the script (its `if __name__ == "__main__":` block included) outside any try,
condition or function, and, in a copy that is certain, those of the modules they load, at most
`_LIMIT` files deep in all.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from auditor import rulebook
from auditor.bash.absent import checkout_root
from auditor.bash.values import EnvVar, segments
from auditor.config.entry_script import MAX_MODULES, iter_closure, parsed, path_value
from auditor.config.entry_stores import binders
from auditor.config.flags import STARTUP
from auditor.config.model import LaunchConfig
from auditor.findings import Finding
from auditor.config.located import shown
from auditor.rulebook.frameworks import frameworks, modeled_packages

_LIMIT = 400  # files read through the imports of one copy
# sys.path edits that may put a root before the known ones (append and extend go after them)
_PATH_FRONT = re.compile(r"sys\.path\s*(\.insert\b|\[|=|\+=)|\bpath\.insert\(|from\s+sys\s+import\b[^\n]*\bpath\b")
# a module that makes modules out of nothing (`sys.modules[...] =`, an import hook, a finder)
_MAKES_MODULES = re.compile(r"sys\.modules\s*(\[|\.update|\.setdefault)|meta_path|path_hooks|rootutils")
# calls in the script before an import that cannot edit sys.path or make modules; any other call
# (`main()`, `use()`, `rootutils.setup_root(...)`) may, or may end the run: imports after it are
# not read as certain
_HARMLESS_CALLS = re.compile(r"(os|os\.path|pathlib|warnings|logging|argparse|typing|re|json|math|time|"
                             r"datetime|functools|collections|dataclasses|torch)\.[\w.]*|"
                             r"sys\.path\.(append|extend)|os\.environ\.[\w.]*|Path|print|int|str|float|"
                             r"bool|dict|list|set|tuple|len|getattr|setattr|isinstance|range|TypeVar|"
                             r"logging|dataclass|field|namedtuple")


@dataclass(frozen=True)
class SearchRoot:
    path: Path | None  # None: an entry whose text is not known
    why: str


@dataclass(frozen=True)
class Missing:
    """An import that fails: `module` (as written at `file`:`line`), the part `absent` of it the
    copy under `package` lacks."""

    module: str
    file: Path
    line: int
    absent: str
    package: Path
    root: SearchRoot
    stop: str = ""  # where a guarded import's failure stops the run: `_Fallback.stop`


@dataclass(frozen=True)
class Unread:
    """A guarded import whose failure stops the run (`stop`), of a package no known root holds:
    the copy it reads, installed in the job's environment (its torch, a release), is not read
    here, so whether it holds `module` (as written at `file`:`line`) is not known."""

    module: str
    file: Path
    line: int
    stop: str


class ImportGaps(NamedTuple):
    """What the script's imports leave on start-up: those that surely fail (`missing`), the
    guarded ones that stop the run where a copy not read lacks them (`unread`), and every one of
    a package no known root holds (`elsewhere`: module, whether it must be a module, file, line),
    whose copy, installed or on a root not known, is not read here."""

    missing: list[Missing]
    unread: list[Unread]
    elsewhere: list[tuple[str, bool, Path, int]]


@dataclass(frozen=True)
class _Fallback:
    """A module-level `try:` of imports whose `except ImportError:` binds `name` to a constant (no
    class), and the module-level `class` statement after it that surely runs with `name` among
    its bases: where an import of the `try` surely fails, that statement raises TypeError."""

    guarded: ast.Try
    name: str
    handler: ast.ExceptHandler
    cls: ast.ClassDef

    def stop(self, file: Path) -> str:
        return (f"the `except` at line {self.handler.lineno} binds `{self.name}` to "
                f"{ast.unparse(self._value())}, so `class {self.cls.name}({self.name})` ({file}:{self.cls.lineno}) "
                "raises TypeError")

    def _value(self) -> ast.expr:
        return next(st.value for st in self.handler.body if isinstance(st, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == self.name for t in st.targets))


def entry_roots(entry: Path, env: dict[str, EnvVar]) -> list[SearchRoot]:
    """sys.path before the installed packages, for `python ENTRY`: the script's directory, then
    the PYTHONPATH entries (an entry not known, or relative, as None: it may hold anything)."""
    here = entry.resolve().parent
    roots = [SearchRoot(here, f"the training script's directory {here}, first on sys.path")]
    var = env.get("PYTHONPATH")
    if var is not None:
        where = "the caller's environment" if var.how == "environ" else f"line {var.line}"
        for text in _entries(var):
            # a root that is no directory here (a container's path, a zip or egg) may hold anything
            known = text is not None and os.path.isabs(text) and os.path.isdir(text)
            roots.append(SearchRoot(Path(text) if known and text else None,
                              f"the PYTHONPATH entry {text} ({where})" if text else "a PYTHONPATH entry not known"))
    return roots


def _entries(var: EnvVar) -> list[str | None]:
    """The PYTHONPATH entries in order, None for one with an unknown piece."""
    out: list[str | None] = []
    current, unknown = "", False
    for text, is_unknown in segments(var.value):
        parts = text.split(os.pathsep) if not is_unknown else [text]
        for k, part in enumerate(parts):
            if k:
                out.append(None if unknown else current)
                current, unknown = "", False
            current += part
            unknown = unknown or is_unknown
    out.append(None if unknown else current)
    return [e for e in out if e != ""]


def _top(root: Path, name: str) -> str:
    """What `root` holds under the top-level name: "package" (regular), "module", "namespace"
    (a directory without __init__.py), "other" (an extension module), or ""."""
    if (root / name / "__init__.py").is_file():
        return "package"
    if (root / f"{name}.py").is_file():
        return "module"
    if any(p.is_file() for p in root.glob(f"{name}.*") if p.suffix in (".so", ".pyd", ".pyc")):
        return "other"
    return "namespace" if (root / name).is_dir() else ""


def _child(package: Path, name: str, dotted: str = "") -> str:
    """Whether the package directory holds submodule `name` (`dotted` in full): "module",
    "package", "absent", or "maybe" (a file `name.*` that is no Python source, or a module a
    build writes: `pip install -e .` may make it)."""
    if (package / f"{name}.py").is_file():
        return "module"
    if (package / name).is_dir():
        return "package"  # regular, or a namespace portion inside a regular package: importable
    if any(package.glob(f"{name}.*")) or built(package, name, dotted):
        return "maybe"
    return "absent"


_EXTENSION = re.compile(r"Extension\s*\(\s*(?:name\s*=\s*)?['\"]([\w.]+)['\"]")
_WRITTEN = re.compile(r"\b(?:write_to|version_file)\s*[=:]\s*['\"]([^'\"]+)['\"]")


def built(package: Path, name: str, dotted: str) -> bool:
    """Whether a build of the project around `package` writes submodule `name`: an extension
    module setup.py or pyproject.toml names (`CUDAExtension('megatron.core._C', ...)`), a file
    setuptools_scm writes (`write_to`, `version_file`), or a path the project's .gitignore keeps
    out of the checkout (made where it runs, never committed)."""
    for project in [package, *package.parents][:6]:
        for build in ("setup.py", "pyproject.toml", "setup.cfg"):
            try:
                text = (project / build).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if dotted and dotted in _EXTENSION.findall(text):
                return True
            for written in _WRITTEN.findall(text):
                target = (project / written).resolve()
                if target.parent == package.resolve() and target.stem == name:
                    return True
        try:
            ignored = (project / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for candidate in (package / f"{name}.py", package / name):
            rel = os.path.relpath(candidate, project)
            for pattern in (p.strip().rstrip("/") for p in ignored):
                if not pattern or pattern.startswith(("#", "!")):
                    continue
                if fnmatch.fnmatchcase(rel, pattern.lstrip("/")) if "/" in pattern \
                        else fnmatch.fnmatchcase(candidate.name, pattern):
                    return True
    return False


def _opaque_init(package: Path) -> bool:
    """An `__init__.py` that may make submodules out of nothing (`__path__` edits,
    pkgutil.extend_path, `sys.modules[...] =`, a module `__getattr__`)."""
    try:
        text = (package / "__init__.py").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    return any(s in text for s in ("__path__", "sys.modules", "extend_path", "def __getattr__"))


class _Resolver:
    def __init__(self, roots: list[SearchRoot], namespace: bool = False) -> None:
        self.roots = roots
        self.namespace = namespace  # a namespace folder is the copy looked into (one root only)

    def where(self, top: str) -> tuple[SearchRoot, str] | None:
        """The known root whose copy of `top` every import reads, and what it holds there; None
        where that is not certain (an unknown root first, a namespace portion) or no known root
        holds it (the installed packages do, or nothing)."""
        for root in self.roots:
            if root.path is None:
                return None
            held = _top(root.path, top)
            if held in ("package", "module") or held == "namespace" and self.namespace:
                return root, held
            if held:
                return None
        return None


def _statements(tree: ast.Module, main: bool = True,
                harmless: set[int] | frozenset[int] = frozenset()) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of a module that run whenever it is loaded, in order: those at
    module level (not in a try, a condition, a loop or a function). Of the program (`main`), only
    those before its training starts: in the body of a module-level `if __name__ == "__main__":`
    too, and none past the first call that may run unread code (`main()`, a helper that may edit
    sys.path, `raise`), nor past the main block (they run after it, once training is over).
    Statements at `harmless` lines (sys.path edits read by the caller: script_roots) run on."""
    out: list[ast.Import | ast.ImportFrom] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out.append(stmt)
        elif not main or stmt.lineno in harmless:
            continue
        elif isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
            for inner in stmt.body:
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    out.append(inner)
                elif _may_run_code(inner):
                    break
            break
        elif _may_run_code(stmt):
            break
    return out


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _fallbacks(tree: ast.Module, main: bool = True,
               harmless: set[int] | frozenset[int] = frozenset()) -> list[_Fallback]:
    """The module-level class statements whose base a failed import's fallback binds to a constant
    (Megatron-LM's examples/multimodal/run_text_generation.py imports ForwardStep and subclasses it,
    :27 and :458; guarded, `except ImportError: ForwardStep = None`), each where it surely runs:
    no statement between rebinds the name (a `from x import *`, `setattr` or `globals()` may), and none before it in the
    program may run code not read (`_statements`' rule). A fallback binding anything else (a
    class, a name), or a handler doing more than bind constants, is not read."""
    out: list[_Fallback] = []
    bound: dict[str, tuple[ast.Try, ast.ExceptHandler]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            base = next((b.id for b in stmt.bases if isinstance(b, ast.Name) and b.id in bound), None)
            if base is not None and not stmt.keywords:  # a metaclass may take any base
                out.append(_Fallback(bound[base][0], base, bound[base][1], stmt))
        for name in [n for n in bound if binders(list(ast.walk(stmt)), n)]:
            del bound[name]
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names) or _rebinds_by_reflection(stmt):
            bound.clear()
        if isinstance(stmt, ast.Try):
            handler = _import_handler(stmt)
            if handler is not None:
                bound.update(dict.fromkeys(_constants(handler), (stmt, handler)))
        elif main and stmt.lineno not in harmless and _may_run_code(stmt):
            break
    return out


_REFLECTION = frozenset({"setattr", "delattr", "globals", "vars", "locals", "exec", "eval", "__import__"})


def _rebinds_by_reflection(stmt: ast.stmt) -> bool:
    """Whether a statement (or a function it defines, called later) may bind a module name
    without naming it: `setattr(sys.modules[__name__], "ForwardStep", X)`, `globals()[...]`,
    `exec`, a module's `__dict__` (review r41-interp 4); binders() reads only the written names."""
    return any(isinstance(n, ast.Name) and n.id in _REFLECTION
               or isinstance(n, ast.Attribute) and (n.attr == "__dict__" or n.attr == "modules"
                                                    and isinstance(n.value, ast.Name) and n.value.id == "sys")
               for n in ast.walk(stmt))


def _import_handler(guarded: ast.Try) -> ast.ExceptHandler | None:
    """The handler that runs where an import of `guarded` fails: the first that catches
    ModuleNotFoundError, where the `try` holds only imports and no `finally`; None otherwise (a
    handler type not read here may catch it first)."""
    if guarded.finalbody or not all(isinstance(st, (ast.Import, ast.ImportFrom, ast.Pass)) for st in guarded.body):
        return None
    for handler in guarded.handlers:
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        named = [ast.unparse(t).rpartition(".")[2] if t is not None else "" for t in types]
        if handler.type is None or _IMPORT_ERRORS & set(named):
            return handler
        if not all(n.endswith(("Error", "Exception", "Warning", "Interrupt", "Exit")) for n in named):
            return None  # a name for a tuple of types, which may hold ImportError
    return None


def _constants(handler: ast.ExceptHandler) -> list[str]:
    """The names a handler surely binds to a constant (`ForwardStep = None`), where all it does is
    such bindings, `pass` and calls that run no unread code (a warning, a log line); else none."""
    names: list[str] = []
    for stmt in handler.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) \
                and all(isinstance(t, ast.Name) for t in stmt.targets):
            names += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        elif not (isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and not _may_run_code(stmt)):
            return []
    return [n for n in names if n != handler.name]


def _may_run_code(stmt: ast.stmt) -> bool:
    """Whether a statement of the program may run code this audit did not read before the next
    import (a call outside _HARMLESS_CALLS, or a `raise`); definitions run nothing."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    if isinstance(stmt, ast.Raise):
        return True
    return any(isinstance(node, ast.Call) and not _HARMLESS_CALLS.fullmatch(ast.unparse(node.func))
               for node in ast.walk(stmt))


def _is_main_guard(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) \
        and {ast.unparse(test.left), ast.unparse(test.comparators[0])} == {"__name__", "'__main__'"}


def _first_path_edit(tree: ast.Module, known: set[int] | frozenset[int] = frozenset()) -> int:
    """The first line where the script may put another root before the known ones (anything but
    `sys.path.append`/`extend`, which go after the installed packages, and the `known` lines,
    whose folder is read: script_roots); past the end if none."""
    lines = [node.lineno for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and ast.unparse(node).startswith("sys.path.")
             and node.attr not in ("append", "extend")]
    lines += [node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AugAssign))
              and any(re.search(r"sys\.(path|modules|meta_path)", ast.unparse(t))
                      for t in getattr(node, "targets", [getattr(node, "target", None)]) if t)]
    # `from sys import path` (then `path.insert(0, ...)`), an import hook or module alias made here
    lines += [node.lineno for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
              and node.module == "sys" and any(a.name in ("path", "meta_path", "modules", "path_hooks")
                                               for a in node.names)]
    lines += [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute)
              and ast.unparse(node).startswith(("sys.meta_path", "sys.path_hooks", "sys.modules."))]
    return min((line for line in lines if line not in known), default=1 << 30)


def _loading_code(tree: ast.Module, text: str) -> str:
    """The text of a module less its function and class bodies: what runs when it is loaded
    (a `sys.modules[...] =` inside a function that loads old checkpoints makes nothing on import)."""
    lines = text.splitlines()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.end_lineno:
            lines[stmt.lineno - 1: stmt.end_lineno] = [""] * (stmt.end_lineno - stmt.lineno + 1)
    return "\n".join(lines)


def _names(node: ast.Import | ast.ImportFrom, package: str | None) -> list[tuple[str, bool]]:
    """The modules a statement loads, each with whether its last part must be a module
    (`import a.b`: yes; `from a import b`: `a` must, `b` may be an attribute)."""
    if isinstance(node, ast.Import):
        return [(a.name, True) for a in node.names]
    if node.level:
        if package is None:
            return []
        parts = package.split(".")
        if node.level - 1 > len(parts) - 1:
            return []
        base = ".".join(parts[: len(parts) - (node.level - 1)])
        module = f"{base}.{node.module}" if node.module else base
    else:
        module = node.module or ""
    out = [(module, True)] if module else []
    out += [(f"{module}.{a.name}", False) for a in node.names if a.name != "*"]
    return out


def import_gaps(entry: Path, roots: list[SearchRoot]) -> ImportGaps:
    """The imports the script certainly cannot satisfy on start-up, first one per module; the
    guarded imports whose None fallback a class statement then subclasses (`_fallbacks`) of a
    package no known root holds, where no import before them surely fails: such a `try: from
    torch.distributed.X import Y` is decided by the job's torch, never this machine's; and the
    start-up imports of packages no known root holds (config/submodule_copy.py asks them of the
    release judged in place of the copy)."""
    front = _front_roots(entry)
    resolver = _Resolver(_first_roots(front) + roots)
    out: list[Missing] = []
    unread: list[Unread] = []
    elsewhere: list[tuple[str, bool, Path, int]] = []
    seen: set[Path] = set()
    todo: deque[tuple[Path, str | None]] = deque([(entry, None)])
    while todo and len(seen) < _LIMIT:
        file, package = todo.popleft()
        if file in seen:
            continue
        seen.add(file)
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
            tree = parsed(text)
        except (OSError, SyntaxError, ValueError):
            continue
        if file != entry and (_PATH_FRONT.search(text) or _MAKES_MODULES.search(_loading_code(tree, text))):
            return ImportGaps([], [], [])  # a module it loads may put another copy first, or make modules: nothing is certain
        known = {line for line, _ in front} if file == entry else set()
        edit = _first_path_edit(tree, known) if file == entry else 1 << 30
        gaps: list[Missing] = []
        for node in _statements(tree, main=file == entry, harmless=known):
            if node.lineno >= edit:
                break  # the script's own sys.path edit may bring another copy first
            for module, must in _names(node, package):
                if resolver.where(module.split(".")[0]) is None:
                    elsewhere.append((module, must, file, node.lineno))
                found = _load(module, must, resolver)
                if isinstance(found, Missing):
                    gaps.append(Missing(module, file, node.lineno, found.absent, found.package, found.root))
                    break
                todo.extend(found)
            if gaps:
                break
        for fallback in _fallbacks(tree, main=file == entry, harmless=known):
            if fallback.cls.lineno >= min([edit, *(g.line for g in gaps)]):
                break  # an import before it stops the run first, or a sys.path edit may bring another copy
            gap = _guarded_gap(fallback.guarded, file, package, resolver)
            if isinstance(gap, Missing):
                gaps = [Missing(gap.module, file, gap.line, gap.absent, gap.package, gap.root, fallback.stop(file))]
                break
            if gap is not None:
                unread.append(Unread(gap[0], file, gap[1], fallback.stop(file)))
        out += gaps
    return ImportGaps(out, unread, elsewhere)


def _guarded_gap(guarded: ast.Try, file: Path, package: str | None,
                 resolver: _Resolver) -> Missing | tuple[str, int] | None:
    """The first import of a `try` body that surely fails (its handler then runs); else the
    first (module, line) of a package no known root holds (an installed copy, not read: it may
    fail) and that not every release judged holds (`released`); else None."""
    unread: tuple[str, int] | None = None
    for node in guarded.body:
        for module, must in _names(node, package) if isinstance(node, (ast.Import, ast.ImportFrom)) else []:
            found = _load(module, must, resolver)
            if isinstance(found, Missing):
                return Missing(module, file, node.lineno, found.absent, found.package, found.root)
            if unread is None and resolver.where(module.split(".")[0]) is None and not released(module, must):
                unread = (module, node.lineno)
    return unread


def released(module: str, must: bool) -> bool:
    """Whether every release of its package the rules judge holds the module (rules
    `[released_modules]`: `torch.distributed.fsdp` in torch 2.7 on), or, where the last part may
    be a name of its parent (`from a import b`), that parent: the job's copy, not read, holds it."""
    held = {m for f in frameworks() for m in rulebook.load(f.name).data.get("released_modules", {}).get("modules", [])}
    return module in held or not must and module.rpartition(".")[0] in held


def _front_roots(entry: Path) -> list[tuple[int, Path]]:
    """The folders the script's `sys.path.insert(0, X)` put first (script_roots), latest first,
    where no import before an insert names a top-level module or package such a folder holds
    (`import os, sys` may come first; `import megatron` before the insert was resolved on the
    old sys.path and stays so); none otherwise."""
    try:
        tree = parsed(entry.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return []
    inserts = [(line, folder) for line, how, folder in script_roots(tree, entry) if how == "insert" and folder]
    last = max((line for line, _ in inserts), default=0)
    earlier = [alias.name if isinstance(node, ast.Import) else node.module or ""
               for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno < last
               for alias in (node.names if isinstance(node, ast.Import) else node.names[:1])]
    if any(isinstance(node, ast.ImportFrom) and node.level and node.lineno < last for node in ast.walk(tree)):
        return []
    # a module beside the script (its folder is sys.path[0]) may import the package first, from
    # another copy, which stays cached (NVIDIA/Megatron-LM examples/inference/run_server.py
    # imports server_utils, which imports megatron.training, before its insert)
    if any(_top(folder, name.split(".")[0]) for name in earlier for folder in (entry.parent, *(f for _, f in inserts))):
        return []
    return sorted(inserts, reverse=True)


def _first_roots(front: list[tuple[int, Path]]) -> list[SearchRoot]:
    return [SearchRoot(folder, f"the folder line {line} of the script puts first on sys.path "
                               "(`sys.path.insert(0, ...)`)") for line, folder in front]


def _load(module: str, must: bool, resolver: _Resolver) -> Missing | list[tuple[Path, str | None]]:
    """The files loading `module` runs (each with its package), or what certainly fails."""
    parts = module.split(".")
    if not all(p.isidentifier() for p in parts):
        return []
    where = resolver.where(parts[0])
    if where is None:
        return []
    root, held = where
    assert root.path is not None
    if held == "module":
        return [(root.path / f"{parts[0]}.py", None)] if len(parts) == 1 else []
    here = root.path / parts[0]
    files: list[tuple[Path, str | None]] = [(here / "__init__.py", parts[0])] if held == "package" else []
    portion = False  # inside a namespace portion: other roots may add to it, nothing is absent
    for k, name in enumerate(parts[1:], start=1):
        if not portion and (held != "namespace" or k > 1) and _opaque_init(here):
            return files
        child = _child(here, name, ".".join(parts[: k + 1]))
        last = k == len(parts) - 1
        if child == "absent" and (must or not last) and not portion:
            return Missing(module, Path(), 0, ".".join(parts[: k + 1]), here, root)
        if child in ("absent", "maybe"):
            return files  # an attribute of the package, or a module a build makes
        package = ".".join(parts[: k + 1])
        if child == "module":
            files.append((here / f"{name}.py", ".".join(parts[:k])))
            return files  # a module: `a.b.c` past it is not looked into
        here = here / name
        if (here / "__init__.py").is_file():
            files.append((here / "__init__.py", package))
        else:
            portion = True  # its modules are still read: one may edit sys.path
    return files


def own_package_gaps(entry: Path, launch_path: str,
                     roots: list[SearchRoot]) -> list[tuple[ast.Import | ast.ImportFrom, str, str, Path, str, str]]:
    """The script's own imports of its checkout's package (a regular package, or a namespace
    folder: Megatron-LM's megatron/ has no __init__.py) whose copy every import reads is not
    certain (no known root holds it as a regular package first) and that the checkout's copy
    lacks: (statement, module, the part absent, checkout, `placed`, `stop`). `placed` says how the
    run itself puts the checkout on sys.path (a known root no unknown one precedes, or the script's
    own `sys.path.append`/`insert` before the import), "" where it does not (the run imports an
    installed copy, or one an unknown root brings); `stop`, for an import in a `try` whose fallback
    a class statement then subclasses (`_fallbacks`), where its failure stops the run, else ""."""
    checkout = checkout_root(launch_path)
    if checkout is None:
        return []
    try:
        tree = parsed(entry.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return []
    resolver = _Resolver(_first_roots(_front_roots(entry)) + roots)
    here = _Resolver([SearchRoot(checkout, "the checkout")], namespace=True)
    added = script_roots(tree, entry)
    out = []

    def gap(node: ast.Import | ast.ImportFrom, stop: str = "") -> bool:
        for module, must in _names(node, None):
            top = module.split(".")[0]
            held = _top(checkout, top) if top.isidentifier() else None
            if held not in ("package", "namespace") or held == "namespace" and any(
                    (checkout / top / name).exists() for name in ("setup.py", "pyproject.toml")):
                continue  # a project folder (a submodule checkout: apex/) is no copy of the library
            if resolver.where(top) is not None:
                continue  # a known root holds it: missing_imports judges it
            found = _load(module, must, here)
            if isinstance(found, Missing):
                placed = _placed(roots, checkout)
                placed = placed or next((f"the script's own `sys.path.{how}` (line {line})"
                                         + ("" if folder else " (of a folder not known here)")
                                         for line, how, folder in added
                                         if line < node.lineno and (folder is None or folder.resolve() == checkout)), "")
                out.append((node, module, found.absent, checkout, placed, stop))
                return True
        return False
    harmless = {line for line, _, _ in added}
    for node in _statements(tree, harmless=harmless):
        gap(node)
    for fallback in _fallbacks(tree, harmless=harmless):
        if not out or fallback.cls.lineno < out[0][0].lineno:
            if any(gap(node, fallback.stop(entry)) for node in fallback.guarded.body
                   if isinstance(node, (ast.Import, ast.ImportFrom))):
                out.insert(0, out.pop())
                break
    return out


def _only_copy(absent: str, entry: Path, line: int, checkout: Path, roots: list[SearchRoot]) -> bool:
    """Whether the checkout's folder is the only copy of the subpackage `absent` lies in (its
    first two parts), whatever is installed: its top package is a namespace whose installed
    portions the rules list (`[namespace_portions]`: no wheel ships megatron/__init__.py nor
    megatron/inference) without it, no root before the installed packages nor folder the script
    adds to sys.path but the checkout holds the top package at all, none of them unknown (a
    caller's `$EXTRA`, `os.environ.get('MEGATRON', ...)`), and no module of the entry's own code
    loaded before `line` may edit sys.path or make modules (evaluation/evaluate_mmmu.py's
    `sys.path.insert`, imported inside a function at :753, runs after). A Missing the checkout's copy shows is then certain.
    Another Megatron-LM tree on the caller's PYTHONPATH or a `.pth` is not looked for, as for
    every root the script does not state."""
    top, _, rest = absent.partition(".")
    sub = rest.split(".")[0]
    portions = {p for f in frameworks() for table in [rulebook.load(f.name).data.get("namespace_portions")]
                if table and table["package"] == top for p in table["portions"]}
    if not portions or not sub or sub in portions:
        return False
    try:
        added = [folder for _, _, folder in script_roots(parsed(entry.read_text(encoding="utf-8")), entry)]
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return False
    if any(path is None or path.resolve() != checkout.resolve() and _top(path, top)
           for path in [*(root.path for root in roots), *added]):
        return False  # a root not known here, or another copy of the package, may come first
    stop = frozenset(m.split(".")[0] for m in modeled_packages())
    try:
        closure = list(iter_closure(entry, stop, before=line))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return False
    if len(closure) >= MAX_MODULES:
        return False
    return not any(_PATH_FRONT.search(code) or _MAKES_MODULES.search(code)
                   for path, tree in closure
                   for code in [_loading_code(tree, path.read_text(encoding="utf-8", errors="replace"))])


def _placed(roots: list[SearchRoot], checkout: Path) -> str:
    """How the run puts the checkout on sys.path where no root not known comes before it (a
    caller's `$EXTRA` first may hold anything: then "")."""
    for root in roots:
        if root.path is None:
            return ""
        if root.path.resolve() == checkout:
            return root.why
    return ""


def script_roots(tree: ast.Module, entry: Path) -> list[tuple[int, str, Path | None]]:
    """The folders the script's module-level `sys.path.append(X)` / `sys.path.insert(0, X)` add,
    where X is known here from `__file__`, directly or through module-level names (NVIDIA/
    Megatron-LM@d98e8a64dd examples/multimodal/run_text_generation.py:11 appends
    `os.path.abspath(os.path.join(os.path.dirname(__file__), os.path.pardir, os.path.pardir))`,
    the checkout's root; examples/post_training/modelopt/quantize.py:21 appends a path built from
    `_SCRIPT_DIR`): (line, "append" or "insert", folder, None where X is not known here)."""
    out: list[tuple[int, str, Path | None]] = []
    names: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = stmt.value
        call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
        if call is None or ast.unparse(call.func) not in ("sys.path.append", "sys.path.insert"):
            continue
        how = ast.unparse(call.func).removeprefix("sys.path.")
        if call.keywords or how == "append" and len(call.args) != 1 or how == "insert" and (
                len(call.args) != 2 or not isinstance(call.args[0], ast.Constant) or call.args[0].value != 0):
            out.append((stmt.lineno, how, None))
            continue
        folder = path_value(call.args[-1], entry.resolve(), dict(names))
        known = folder is not None and folder.is_absolute() and folder.is_dir()
        out.append((stmt.lineno, how, folder if known else None))
    return out


_PYTHON_OPTIONS = re.compile(r"\bpython[\d.]*((?:\s+-[A-Za-z]+)+)")


def search_path_differs(config: LaunchConfig) -> str:
    """Why sys.path of the run is not the one entry_roots takes, or "": an interpreter option on
    the training command (`-P`, `-I`: no script directory; `-E`, `-I`: no PYTHONPATH) or
    PYTHONSAFEPATH set (python(1), "Miscellaneous options")."""
    safe = config.env.get("PYTHONSAFEPATH")
    if safe is not None and safe.value != "":
        return f"PYTHONSAFEPATH is set (line {safe.line}): the script's directory is not on sys.path"
    lines = config.text.splitlines()[max(config.command_line - 1, 0): max(config.end_line, config.command_line)]
    for match in _PYTHON_OPTIONS.finditer("\n".join(lines)):
        for option in match.group(1).split():
            letters = set(option[1:]) if not option.startswith("--") else set()
            if letters & {"P", "I", "E"}:
                return f"python {option} (line {config.command_line}) changes the search path"
    return ""


def read_entry_imports(config: LaunchConfig, entry: Path, path: str, unread_at: int | None = None,
                       copy_differs: str = "") -> None:
    """An import the training script (a script path, not `-m`) cannot satisfy: an error naming
    the import and its line where the copy it reads is certain (not where `copy_differs` says why
    the run may start another file, nor where the search path differs: search_path_differs, both
    an undecided start-up check instead); else, where the checkout's own
    package lacks it and the run imports an installed copy, an undecided start-up check. A
    subpackage only the checkout can hold (_only_copy) is certain only where nothing before the
    command (`unread_at`, its line: entry_absent.unread_before) may run code not read here, move the
    run elsewhere or install another copy (`source /opt/env.sh`, `cd /opt/megatron-lm`, `pip
    install -e /opt/megatron-lm`)."""
    if config.script_module or config.script_read:
        return  # `-m`, or a file read in place of the cluster's (config.entry_path): its copy differs
    roots = entry_roots(entry, config.env)
    where = f"{path}:{config.command_line}"
    differs = copy_differs or search_path_differs(config)
    gaps = import_gaps(entry, roots)
    for gap in gaps.missing[:1]:
        at = f"{gap.file}:{gap.line}"
        if differs:  # another copy may come first: undecided, never DOES NOT START
            config.diagnostics.append(Finding(
                "launch.import-unread-copy", "info",
                f"`{gap.module}` ({at}) is not in {gap.package} (no `{gap.absent}`), which Python would "
                f"take `{gap.absent.split('.')[0]}` from{f' ({gap.stop})' if gap.stop else ''}; but {differs}, "
                "so another copy may come first",
                where=where, detail={"undecided": f"whether the run can import `{gap.absent}` ({at}); "
                                     "without it the run does not start",
                                     "decide": f"python -c 'import {gap.absent}' in the job's environment",
                                     "aside": "startup"}))
            continue
        config.diagnostics.append(Finding(
            "launch.import-missing", "error",
            f"`{gap.module}` ({at}) cannot be imported: Python takes `{gap.absent.split('.')[0]}` from "
            f"{gap.root.why}, whose copy ({gap.package}) holds no `{gap.absent.rsplit('.', 1)[-1]}`; "
            + (f"{gap.stop} on every rank before training" if gap.stop
               else "ModuleNotFoundError stops every rank before training"),
            fix=f"import `{gap.absent}` from where it now lives, or run a checkout that has it",
            where=where, detail={**STARTUP, "module": gap.module, "file": str(gap.file), "line": gap.line}))
    around = checkout_root(path)  # a package of its own is own_package_gaps' to judge, on its copy
    for unread in [] if gaps.missing else [u for u in gaps.unread if around is None
                                          or not _top(around, u.module.split(".")[0])][:1]:
        at, top = f"{unread.file}:{unread.line}", unread.module.split(".")[0]
        config.diagnostics.append(Finding(
            "launch.import-unread-copy", "info",
            f"`{unread.module}` ({at}) is imported from a `{top}` no root read here holds: the one the "
            f"job's environment installs (this machine's decides nothing); where it lacks it, {unread.stop} "
            "on every rank before training",
            where=where, detail={"undecided": f"whether the job's `{top}` has `{unread.module}` ({at}); without "
                                              "it the run does not start",
                                 "decide": f"python -c 'import {unread.module}' in the job's environment"}))
    for node, module, absent, checkout, placed, stop in own_package_gaps(entry, path, roots)[:1]:
        top = module.split(".")[0]
        then = f" ({stop})" if stop else ""
        unknown = next((r for r in roots if r.path is None), None)
        if placed and not stop and unread_at is None and _only_copy(absent, entry, node.lineno, checkout, roots):
            config.diagnostics.append(Finding(
                "launch.import-missing", "error",
                f"`{module}` ({shown(entry)}:{node.lineno}) cannot be imported: no installed distribution "
                f"puts `{'.'.join(absent.split('.')[:2])}` in the `{top}` namespace, so Python takes it from "
                f"the checkout ({placed}), which holds no `{absent}`; ModuleNotFoundError stops every rank "
                "before training",
                fix=f"import `{absent}` from where it now lives, or run a checkout that has it",
                where=where, detail={**STARTUP, "module": module, "file": str(entry), "line": node.lineno}))
            continue
        if placed:  # the run means to import this checkout's copy: what it imports there is not read
            config.diagnostics.append(Finding(
                "launch.import-unread-copy", "info",
                f"`{module}` ({entry}:{node.lineno}) is not in the checkout {checkout} (no `{absent}`), whose "
                f"`{top}` {placed} puts on sys.path; where no other copy comes first (an installed "
                f"`{top}`, a caller's PYTHONPATH"
                + (f", what line {unread_at} runs before the command" if unread_at is not None else "") + ") "
                + (f"its `except` runs{then}, stopping every rank" if stop else "ModuleNotFoundError stops every rank")
                + ", and the code it would run is not read here",
                where=where, detail={"undecided": f"whether the run can import `{absent}` ({entry.name}:"
                                     f"{node.lineno}), which the checkout lacks (without it the run does not start)",
                                     "decide": f"python -c 'import {absent}' in the job's environment"}))
            continue
        whence = (f"{unknown.why} comes before the checkout and may hold another" if unknown is not None
                  else f"no root before the installed packages holds it ({', '.join(r.why for r in roots)}), "
                  "so the run imports an installed copy, not read here")
        config.diagnostics.append(Finding(
            "launch.import-unread-copy", "info",
            f"`{module}` ({entry}:{node.lineno}) is not in the checkout {checkout} (no `{absent}`){then}; "
            f"whether the run's `{top}` has it is not known: {whence}",
            where=where, detail={"undecided": f"whether the `{top}` the run imports has `{absent}`, which "
                                 f"{entry.name}:{node.lineno} imports and the checkout lacks "
                                 "(without it the run does not start)",
                                 "decide": f"python -c 'import {absent}' in the job's environment",
                                 "aside": "startup"}))
