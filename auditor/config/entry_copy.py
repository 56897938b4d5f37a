"""A copy of a modelled entry script, outside its framework's tree, read as the entry it copies
(issue 22 item 9).

Pai-Megatron-Patch ships ChatLearn's entry point as examples/qwen3/chatlearn_entrypoint.py
(alibaba/Pai-Megatron-Patch@a098ca5acb), run as `python ../qwen3/chatlearn_entrypoint.py grpo
--config-file ...`: the same program as alibaba/ChatLearn's chatlearn/entrypoint.py, at a path
no `python_scripts` pattern names. A `[[launcher]]`'s `script_copies` says what such a copy is
(its file name, a package it imports, a class or function it defines), so that it is recognised
by what it is, not by a list of the paths other projects put it at. The run is then read as the
modelled entry's (`entry_name`: its launcher reads `python entrypoint.py`, whose rules apply).

The same holds for a framework's Hydra main: verl's examples/split_placement/main_ppo_split.py is
verl/trainer/main_ppo.py with its own `@hydra.main(config_path="config",
config_name="ppo_trainer_split")`. A `[[launcher]]`'s `hydra_copies` says what such a copy is (a
package it imports, the config key its workers are picked by); `python3 COPY.py a.b=c` is then
read as the modelled module's run (`hydra_copy`, `copied_main`), composing the copy's own config.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from auditor.bash.absent import checkout_root
from auditor.bash.values import Field
from auditor.config.entry_script import dotted, parsed
from auditor.config.lightning_entry import script_file
from auditor.config.model import LaunchConfig
from auditor.findings import Finding


def is_copy(launcher: dict, script: str, launch_path: str) -> bool:
    """Whether `script` (as written on the command line) is a copy of the entry `launcher`'s
    `python_scripts` model: its file name matches `script_copies.names`, and the file, found
    beside the launch script or in the launch directory, imports one of `imports` and defines
    one of `defines` at its top level."""
    copies = launcher.get("script_copies")
    if not copies or not any(fnmatch.fnmatchcase(os.path.basename(script), p) for p in copies["names"]):
        return False
    path = script_file(script, launch_path)
    if path is None:
        return False
    st = os.stat(path)
    imports, defines = _shape(path, st.st_mtime_ns, st.st_size)
    return bool(imports & set(copies["imports"])) and bool(defines & set(copies["defines"]))


def entry_name(config: LaunchConfig, launcher: dict, launch_path: str) -> str:
    """The file name the run's launcher is read under (`config.script`'s): the modelled entry's
    for a copy, said with what made it one (so that the rules of `python entrypoint.py` apply),
    else the script's own."""
    script = config.script
    if launcher.get("python_scripts") and (main := hydra_copy(launcher, script, launch_path)):
        _said(config, launcher, str(script), main, launcher["python_scripts"][0], launch_path)
        return os.path.basename(launcher["python_scripts"][0])
    if not isinstance(script, str) or not is_copy(launcher, script, launch_path):
        return os.path.basename(str(script))
    copies, model = launcher["script_copies"], launcher["python_scripts"][0]
    _note(config, launch_path, script, model,
          f"{script} is read as {launcher['name']}'s {model}, a copy of it by its name, its imports "
          f"({', '.join(copies['imports'])}) and what it defines ({', '.join(copies['defines'])})")
    return os.path.basename(model)


@functools.lru_cache(maxsize=32)
def _shape(path: str, mtime: int, size: int) -> tuple[frozenset[str], frozenset[str]]:
    """(the top-level packages the file imports, the classes and functions it defines at its top
    level); empty where it is no Python this reader parses. `mtime` and `size` key the cache."""
    try:
        tree = parsed(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return frozenset(), frozenset()
    imports = {a.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    imports |= {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    defines = {node.name for node in tree.body
               if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    return frozenset(imports), frozenset(defines)

# `python -m pkg.mod`'s module, as written (no `=`: a Hydra override is no module)
_MODULE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


@dataclass(frozen=True)
class HydraMain:
    """What a `@hydra.main(config_path=..., config_name=...)` entry composes its config from: the
    decorator's literal arguments (None where not given or not a literal), the file read and the
    working directory the run starts in (a relative `hydra.searchpath` `file://DIR` is relative to
    it): the folder the entry was found in, less the path the command line wrote."""

    entry: Path
    config_path: str | None
    config_name: str | None
    line: int
    cwd: Path | None

    def shown(self) -> str:
        return (f'@hydra.main(config_path="{self.config_path}", config_name="{self.config_name}") '
                f"({self.entry.name}:{self.line})")


def hydra_main(script: str, launch_path: str) -> HydraMain | None:
    """The `@hydra.main` of the Python entry `script` (as written on the command line: a file, or
    a module `-m` runs), found beside the launch script, in the working directory or at the root
    of the checkout the launch script is in (where `python -m pkg.mod` imports it from); None
    where it has none or is not read."""
    if not script.endswith(".py") and _MODULE.fullmatch(script):
        script = script.replace(".", "/") + ".py"
    root = checkout_root(launch_path)
    path = script_file(script, launch_path) or (
        str(root / script) if root is not None and not os.path.isabs(script) and (root / script).is_file() else None)
    if path is None:
        return None
    st = os.stat(path)
    found = _decorated(path, st.st_mtime_ns, st.st_size)
    if found is None:
        return None
    config_path, config_name, line = found
    written = Path(os.path.normpath(script))
    entry = Path(path)
    tail = len(written.parts)
    cwd = (Path(*entry.parts[:-tail]) if not written.is_absolute() and entry.parts[-tail:] == written.parts
           else None)
    return HydraMain(entry, config_path, config_name, line, cwd)


def hydra_copy(launcher: dict, script: object, launch_path: str) -> HydraMain | None:
    """The `@hydra.main` of `script` where it is a copy of the Hydra main `launcher` models
    (`hydra_copies`: verl's main_ppo.py copied as examples/split_placement/main_ppo_split.py): it
    imports one of `imports` and reads one of the config keys `reads` (`config.a.b.c`), the key
    the modelled main picks its workers by; else None."""
    copies = launcher.get("hydra_copies")
    if not copies or not isinstance(script, str) or not (script.endswith(".py") or _MODULE.fullmatch(script)):
        return None
    main = hydra_main(script, launch_path)
    if main is None:
        return None
    st = os.stat(main.entry)
    modules, read = _uses(str(main.entry), st.st_mtime_ns, st.st_size)
    if not any(m == p or m.startswith(f"{p}.") for m in modules for p in copies["imports"]):
        return None
    if copies["reads"] and not any(a == key or a.endswith(f".{key}") for a in read for key in copies["reads"]):
        return None
    return main


def copied_main(config: LaunchConfig, launcher: dict, args: list[Field],
                launch_path: str) -> tuple[HydraMain | None, list[Field]]:
    """(the copy's @hydra.main, the arguments after its script) where the command's first argument
    is a copy of `launcher`'s Hydra main (training_command reads `python3 COPY.py a.b=c` as the
    module it copies); said in a note. (None, args) otherwise."""
    main = hydra_copy(launcher, args[0].value, launch_path) if args else None
    if main is None:
        return None, args
    config.script = args[0].value
    config.script_module = not str(args[0].value).endswith(".py")
    _said(config, launcher, str(args[0].value), main, launcher["python_modules"][0], launch_path)
    return main, args[1:]


def _said(config: LaunchConfig, launcher: dict, script: str, main: HydraMain, model: str,
          launch_path: str) -> None:
    """The note that `script` is read as `model`, the Hydra main it copies, and why."""
    copies = launcher["hydra_copies"]
    keys = f" and the config key its workers are picked by ({', '.join(copies['reads'])})" if copies["reads"] else ""
    _note(config, launch_path, script, model,
          f"{script} is read as {launcher['name']}'s {model} on its own config, a copy of it by its "
          f"imports ({', '.join(copies['imports'])}), its {main.shown()}{keys}")


def _note(config: LaunchConfig, launch_path: str, script: str, model: str, message: str) -> None:
    """The `launch.entry-copy` note: `script` is read as the front end's `model`."""
    config.diagnostics.append(Finding(
        "launch.entry-copy", "info", message,
        fix="--command gives the training command by hand where this is not the same program",
        where=f"{launch_path}:{config.command_line}", detail={"script": script, "as": model}))


@functools.lru_cache(maxsize=32)
def _decorated(path: str, mtime: int, size: int) -> tuple[str | None, str | None, int] | None:
    """(config_path, config_name, line) of the file's top-level `@hydra.main(...)` function (also
    `from hydra import main`); None where it has none or is no Python this reader parses."""
    try:
        tree = parsed(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None
    names = {"hydra.main"} | {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom)
                              and node.module == "hydra" for a in node.names if a.name == "main"}
    for node in tree.body:
        for deco in getattr(node, "decorator_list", ()):
            if isinstance(deco, ast.Call) and dotted(deco.func) in names:
                given = dict(zip(("config_path", "config_name"), deco.args))
                given |= {k.arg: k.value for k in deco.keywords if k.arg}
                literal = {k: v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                           for k, v in given.items()}
                return literal.get("config_path"), literal.get("config_name"), deco.lineno
    return None


@functools.lru_cache(maxsize=32)
def _uses(path: str, mtime: int, size: int) -> tuple[frozenset[str], frozenset[str]]:
    """(every module the file imports, by its full name; every dotted attribute chain it reads:
    `config.actor_rollout_ref.actor.strategy`)."""
    try:
        tree = parsed(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return frozenset(), frozenset()
    modules = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    modules |= {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    read = {d for node in ast.walk(tree) if isinstance(node, ast.Attribute) and (d := dotted(node))}
    return frozenset(modules), frozenset(read)
