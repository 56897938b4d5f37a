"""A copy of a modelled entry script, outside its framework's tree, read as the entry it copies
(issue 22 item 9).

Pai-Megatron-Patch ships ChatLearn's entry point as examples/qwen3/chatlearn_entrypoint.py
(alibaba/Pai-Megatron-Patch@a098ca5acb), run as `python ../qwen3/chatlearn_entrypoint.py grpo
--config-file ...`: the same program as alibaba/ChatLearn's chatlearn/entrypoint.py, at a path
no `python_scripts` pattern names. A `[[launcher]]`'s `script_copies` says what such a copy is
(its file name, a package it imports, a class or function it defines), so that it is recognised
by what it is, not by a list of the paths other projects put it at. The run is then read as the
modelled entry's (`entry_name`: its launcher reads `python entrypoint.py`, whose rules apply).
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import os
from pathlib import Path

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
    if not isinstance(script, str) or not is_copy(launcher, script, launch_path):
        return os.path.basename(str(script))
    copies, model = launcher["script_copies"], launcher["python_scripts"][0]
    config.diagnostics.append(Finding(
        "launch.entry-copy", "info",
        f"{script} is read as {launcher['name']}'s {model}, a copy of it by its name, its imports "
        f"({', '.join(copies['imports'])}) and what it defines ({', '.join(copies['defines'])})",
        fix="--command gives the training command by hand where this is not the same program",
        where=f"{launch_path}:{config.command_line}", detail={"script": script, "as": model}))
    return os.path.basename(model)


@functools.lru_cache(maxsize=32)
def _shape(path: str, mtime: int, size: int) -> tuple[frozenset[str], frozenset[str]]:
    """(the top-level packages the file imports, the classes and functions it defines at its top
    level); empty where it is no Python this reader parses. `mtime` and `size` key the cache."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return frozenset(), frozenset()
    imports = {a.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    imports |= {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    defines = {node.name for node in tree.body
               if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    return frozenset(imports), frozenset(defines)
