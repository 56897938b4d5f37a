"""The run's entry script is part of the run: the environment variables it sets from Python
(`os.environ["X"] = "v"`, `os.environ.setdefault("X", "v")`, `os.putenv("X", "v")`, `environ[...]`
after `from os import environ`) join the launch script's, with their `file:line`.

The entry script is the training command's (`torchrun ... train.py`, `-m pkg.mod`), looked up
beside the launch script (where a job that `cd`s to it runs it), else in the working directory;
one not found is said (an info finding), not guessed. It is read with the stdlib `ast` and never run.

When a setting reaches the run: a variable torch reads once at import (`read_at = "import"` in
rules/torch.toml) is seen only if it is set before the first import of torch; after one it is
ignored (said), after another third-party import (which may import torch) unknown. A setting in a
function, a branch or a loop, or whose value is no literal, is unknown, never absent.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.bash.values import EnvVar, Symbolic
from auditor.config.entry_path import in_checkout
from auditor.config.entry_script import is_main_guard, parsed
from auditor.config.model import LaunchConfig
from auditor.findings import Finding


@dataclass(frozen=True)
class EntryFile:
    path: str  # the file read
    written: str  # its path relative to where it was looked up (`train.py`, `pkg/mod.py`)


@dataclass(frozen=True)
class Setting:
    name: str
    value: str | Symbolic
    line: int
    how: str  # "environ", "setdefault", "putenv"
    nested: bool  # in a function, class, branch or loop: whether it runs is not known here
    torch_at: int  # the line of the first import of torch before it (0: none)
    other_at: int  # of another third-party module, which may import torch


def locate(launch: LaunchConfig) -> tuple[EntryFile | None, str]:
    """The entry script, or why there is none to read ("" where the launcher runs none)."""
    script = launch.script
    if script is None:
        return None, ""
    if not isinstance(script, str):
        return None, f"its path is {script}, not known statically"
    if launch.script_module:  # `-m pkg.mod`: the file config.entry_module found, if any
        tail = script.replace(".", "/")
        if not launch.script_read:
            return None, f"{tail}.py is on no sys.path entry known here (the working directory {os.getcwd()})"
        return EntryFile(launch.script_read, tail + ("/__main__.py" if launch.script_read.endswith(
            "__main__.py") else ".py")), ""
    if launch.script_read:  # an absolute path of another machine, read from the checkout
        return EntryFile(launch.script_read, script), ""
    written = script
    if os.path.isabs(written):
        instead = in_checkout(launch.path, written)
        if instead is not None:
            return EntryFile(str(instead), written), ""
        return (EntryFile(written, written), "") if os.path.isfile(written) else (
            None, f"{written} does not exist here")
    here = os.path.dirname(os.path.abspath(launch.path))
    found = [p for p in (os.path.join(here, written), os.path.abspath(written)) if os.path.isfile(p)]
    if not found:
        return None, (f"{written} is neither beside {launch.path} nor in the working directory "
                      f"{os.getcwd()}")
    return EntryFile(found[0], written), ""


def located_stat(launch: LaunchConfig) -> tuple[EntryFile, os.stat_result] | None:
    """The entry script and its stat (a cache key: path, mtime, size), or None where it is not
    found or cannot be read."""
    entry, _ = locate(launch)
    if entry is None:
        return None
    try:
        return entry, os.stat(entry.path)
    except OSError:
        return None


@functools.cache
def read_at_import() -> frozenset[str]:
    """The variables torch reads once, when it is imported (rules/torch.toml `read_at`)."""
    return frozenset(e["name"] for e in rulebook.load("torch").data.get("env_var", [])
                     if e.get("read_at") == "import")


def _is_os(node: ast.expr, names: frozenset[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def _is_environ(node: ast.expr, names: frozenset[str], bare: bool) -> bool:
    if isinstance(node, ast.Name):
        return bare and node.id == "environ"
    return isinstance(node, ast.Attribute) and node.attr == "environ" and _is_os(node.value, names)


def _literal(node: ast.expr, text: str) -> str | Symbolic:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return Symbolic(ast.get_source_segment(text, node) or "an expression")


def _setting(stmt: ast.stmt, names: frozenset[str], bare: bool,
             text: str) -> tuple[str, str | Symbolic, str] | None:
    """(name, value, how) when `stmt` sets a variable named by a literal; `names`: what the
    module calls `os` (`import os as _os`)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if (isinstance(target, ast.Subscript) and _is_environ(target.value, names, bare)
                and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str)):
            return target.slice.value, _literal(stmt.value, text), "environ"
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call, func = stmt.value, stmt.value.func
        how = ("setdefault" if isinstance(func, ast.Attribute) and func.attr == "setdefault"
               and _is_environ(func.value, names, bare) else
               "putenv" if isinstance(func, ast.Attribute) and func.attr == "putenv"
               and _is_os(func.value, names) else "")
        if how and len(call.args) == 2 and isinstance(call.args[0], ast.Constant) \
                and isinstance(call.args[0].value, str):
            return call.args[0].value, _literal(call.args[1], text), how
    return None


def _imports(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [a.name for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
        return [stmt.module]
    return []


def entry_tree(launch: LaunchConfig) -> tuple[EntryFile, ast.Module] | None:
    """The launch's entry script and its parse, for the readers of what its code states
    (config/lightning_entry, config/pipelining_script); None where it is not found or not read
    (`read_entry` says why)."""
    entry, _ = locate(launch)
    if entry is None:
        return None
    try:
        return entry, _tree(Path(entry.path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def _tree(text: str) -> ast.Module:
    """The entry script parsed once per text: a scan reads the launch once per release it judges
    on, and each read wants the settings and the init_process_group calls (never mutated); the
    cache is shared with the other readers of the entry (entry_script.parsed)."""
    return parsed(text)


def settings(text: str) -> list[Setting]:
    """Every setting of the script in the order a run executes the module's top level; those in
    functions and branches after it, as "maybe" unless torch was imported before their `def`."""
    tree = _tree(text)
    bare = any(isinstance(s, ast.ImportFrom) and s.module == "os"
               and any(a.name == "environ" and a.asname is None for a in s.names)
               for s in ast.walk(tree))
    names = frozenset({"os"} | {a.asname for s in ast.walk(tree) if isinstance(s, ast.Import)
                                for a in s.names if a.name == "os" and a.asname})
    out: list[Setting] = []
    torch_at, other_at = 0, 0  # the first import of torch; of another third-party module

    def top(body: list[ast.stmt]) -> None:
        nonlocal torch_at, other_at
        for stmt in body:
            if is_main_guard(stmt):
                top(stmt.body)  # type: ignore[attr-defined]
                continue
            for module in _imports(stmt):
                root = module.partition(".")[0]
                if root == "torch":
                    torch_at = torch_at or stmt.lineno
                elif root not in sys.stdlib_module_names and root != "__future__":
                    other_at = other_at or stmt.lineno
            found = _setting(stmt, names, bare, text)
            if found is not None:
                out.append(Setting(*found[:2], stmt.lineno, found[2], False, torch_at, other_at))
            elif not isinstance(stmt, ast.Import | ast.ImportFrom):
                for node in ast.walk(stmt):  # a function, class, branch or loop
                    if isinstance(node, ast.stmt) and node is not stmt \
                            and (found := _setting(node, names, bare, text)) is not None:
                        out.append(Setting(*found[:2], node.lineno, found[2], True, torch_at, other_at))

    top(tree.body)
    return sorted(out, key=lambda s: s.line)


def init_values(text: str, path: str) -> dict[str, tuple[Any, str, str]]:
    """`init_device_id_given` where the script calls `init_process_group` itself: True when
    every call passes `device_id`, False when none does (eager or lazy NCCL init,
    rules/torch.toml torch.eager-init); nothing where calls disagree or pass **kwargs. With it,
    `distributed_backend` where every call names the same backend as a literal."""
    calls = [n for n in ast.walk(_tree(text)) if isinstance(n, ast.Call)
             and (n.func.attr if isinstance(n.func, ast.Attribute) else
                  n.func.id if isinstance(n.func, ast.Name) else "") == "init_process_group"]
    if not calls or any(k.arg is None for c in calls for k in c.keywords):
        return {}
    given = {any(k.arg == "device_id" for k in c.keywords) for c in calls}
    if len(given) != 1:
        return {}
    at = f"{path}:{min(c.lineno for c in calls)}"
    said = "passes device_id" if True in given else "does not pass device_id"
    out: dict[str, tuple[Any, str, str]] = {
        "init_device_id_given": (given.pop(), f"{at}: init_process_group(...) {said}", at)}
    backends = {_backend_literal(c) for c in calls}
    if len(backends) == 1 and (backend := backends.pop()) is not None:
        out["distributed_backend"] = (backend, f"{at}: init_process_group({backend!r})", at)
    return out


def _backend_literal(call: ast.Call) -> str | None:
    """The backend an init_process_group call names as a string literal (first argument or
    `backend=`), else None."""
    node = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "backend"), None)
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def read_entry(launch: LaunchConfig) -> None:
    """Add the entry script's settings to `launch.env`, and say what was not read."""
    entry, why = locate(launch)
    if entry is None:
        if why:
            launch.diagnostics.append(Finding(
                "launch.entry-script", "info",
                f"the entry script is not read ({why}): environment variables it sets from Python "
                "are not part of this scan", fix="run p2paudit where the job starts, beside the script",
                where=f"{launch.path}:{launch.command_line}"))
        return
    try:
        text = Path(entry.path).read_text(encoding="utf-8")
        found = settings(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        launch.diagnostics.append(Finding(
            "launch.entry-script", "info",
            f"the entry script {entry.path} is not read ({type(exc).__name__}: {exc}): environment "
            "variables it sets from Python are not part of this scan",
            where=f"{launch.path}:{launch.command_line}"))
        return
    launch.entry_values.update(init_values(text, entry.path))
    torch_at, other_at = _package_imports(entry)
    for s in found:
        _merge(launch, entry, s, torch_at or (f"line {s.torch_at}" if s.torch_at else ""),
               other_at or (f"line {s.other_at}" if s.other_at else ""))


def _package_imports(entry: EntryFile) -> tuple[str, str]:
    """`-m pkg.mod` runs pkg/__init__.py first: where it imports torch, and where it imports
    something else that may (a third-party module, a relative import); "" where not."""
    parts = entry.written.split("/")[:-1]
    root = entry.path[:len(entry.path) - len(entry.written)]
    torch_at, other_at = "", ""
    for n in range(1, len(parts) + 1):
        init = os.path.join(root, *parts[:n], "__init__.py")
        try:
            tree = ast.parse(Path(init).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        for stmt in ast.walk(tree):
            if not isinstance(stmt, ast.Import | ast.ImportFrom):
                continue
            relative = isinstance(stmt, ast.ImportFrom) and stmt.level > 0
            for module in ["."] if relative else _imports(stmt):
                root_name = module.partition(".")[0]
                where = f"{init}:{stmt.lineno}"
                if root_name == "torch":
                    torch_at = torch_at or where
                elif module == "." or root_name not in sys.stdlib_module_names:
                    other_at = other_at or where
    return torch_at, other_at


def _merge(launch: LaunchConfig, entry: EntryFile, s: Setting, torch_at: str, other_at: str) -> None:
    """`torch_at`, `other_at`: where torch, or a module that may import it, was imported before
    the setting ("" where nothing was)."""
    at = f"{entry.path}:{s.line}"
    value: str | Symbolic = s.value
    at_import = s.name in read_at_import()
    if at_import and torch_at:
        launch.diagnostics.append(Finding(
            "launch.entry-env-late", "info",
            f"{at} sets {s.name} after torch is imported ({torch_at}): torch reads it "
            "once, at import, so this run does not see the value",
            fix=f"set {s.name} in the launch script, or before `import torch`", where=at,
            detail={"variable": s.name}))
        return
    if s.nested:
        value = Symbolic(f"{s.value} if {at} runs")
    elif at_import and other_at:
        value = Symbolic(f"{s.value} if the import at {other_at} does not import torch "
                         f"before {at}")
    have = launch.env.get(s.name)
    mine = EnvVar(s.name, value, s.line, "python", entry.path)
    before = () if have is None or have.how == "environ" else (replace(have, others=()), *have.others)
    if s.how == "setdefault" and have is not None:
        if have.how == "assign":  # unexported: os.environ has it only if the caller exports it
            launch.env[s.name] = replace(mine, value=Symbolic(f"{have.value} or {value}"),
                                         others=before)
        else:  # exported: setdefault keeps it
            launch.env[s.name] = replace(have, others=(*have.others, mine))
        return
    launch.env[s.name] = replace(mine, others=before)
