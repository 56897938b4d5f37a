"""What a torch-launched Python entry runs on, from what it and its local modules import.

torchrun, `python -m torch.distributed.run/launch` and `python` name no framework: the rules
otherwise read such a run as Megatron-LM's front end. The entry's own imports say more, read
with the stdlib `ast` (entry_script.iter_closure), never run:
- the entry script imports a framework with a pipeline engine of its own that no rules model
  (nanotron, ColossalAI: rules/stacks.toml `[[own_pipeline]]`): the run is NOT COVERED
  (`own_pipeline`);
- every import is the standard library, a local module or a package that builds no pipeline
  (`[no_pipeline]`), used without the exceptions (DeepSpeed's PipelineModule, torch's
  pipelining, transformers' Trainer), no local code names torch's P2P API (rules/torch.toml
  `[[p2p_api]]`: a pipeline of its own, or a framework vendored beside the script, Megatron-LM's
  checkout) and nothing imports or runs code at run time: the run is
  no pipeline run (`builds_no_pipeline`, called by config.launch.runs_no_pipeline, the one place
  that decides it). Anything less certain is left to the analysis.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.config.entry_script import (
    MAX_MODULES,
    dotted,
    foreign_imports,
    iter_closure,
    parsed,
    uses_modules,
)
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import locate
from auditor.findings import Finding
from auditor.rulebook.frameworks import launched_by

RULES = "stacks"
# Launchers that name no framework: the entry's imports decide the stack.
LAUNCHERS = ("torchrun", "torchrun *", "python -m torch.distributed.*", "python", "python *", "python3",
             "python3 *")


def _entry(launch: LaunchConfig) -> Any:
    """The entry script found here (pyenv.EntryFile), or None."""
    if not launched_by(launch.launcher, LAUNCHERS):
        return None
    return locate(launch)[0]


def own_pipeline(launch: LaunchConfig) -> None:
    """A `launch.not-covered` finding where the entry script imports a framework of
    `[[own_pipeline]]` (its trainer is what the entry runs: nanotron's run_train.py, a
    ColossalAI script): what the run is, what the audit covers, the step that decides it."""
    entry = _entry(launch)
    if entry is None:
        return
    try:
        tree = parsed(Path(entry.path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return  # pyenv.read_entry says why the script is not read
    for stack in rulebook.load(RULES).data.get("own_pipeline", []):
        if not uses_modules(tree, stack["modules"], []):
            continue
        launch.diagnostics.append(Finding(
            "launch.not-covered", "warning",
            f"{os.path.basename(entry.written)} trains with {stack['what']} ({os.path.basename(entry.path)}:"
            f"{_import_line(tree, stack['modules'])} imports {stack['modules'][0]}): {stack['covers']}",
            where=f"{launch.path}:{launch.command_line}",
            detail={"stack": stack["name"], "decide": stack["decide"], "source": stack["source"]}))
        return


def builds_no_pipeline(launch: LaunchConfig) -> str | None:
    """What the run is where its entry surely builds no pipeline (see the module's docstring),
    else None."""
    entry = _entry(launch)
    if entry is None:
        return None
    try:
        stat = os.stat(entry.path)
        found = _pipeline_free(entry.path, stat.st_mtime_ns, stat.st_size)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None  # pyenv.read_entry says why the script is not read
    if found is None:
        return None
    shown, packages = found
    return (f"`{launch.launcher}` builds no pipeline: {entry.written} and the {shown} local module(s) "
            f"it imports use only the standard library and packages that build none ({packages}; "
            f"not torch's pipelining or P2P, DeepSpeed's PipelineModule or transformers' Trainer: "
            f"rules/{RULES}.toml [no_pipeline]), so no pipeline schedule runs; "
            f"{os.path.basename(entry.path)} runs as written, data parallel at most")


@functools.lru_cache(maxsize=16)
def _pipeline_free(path: str, mtime_ns: int, size: int) -> tuple[int, str] | None:
    """(local modules read, the allowed packages used) where the closure of the entry at `path`
    builds no pipeline, else None; stops at the first module that could build one (a Megatron-LM
    checkout is not read whole). Asked once per entry: each candidate command asks again."""
    data = rulebook.load(RULES).data["no_pipeline"]
    excepted_modules = list(data["except_modules"])
    excepted_names = list(data["except_names"])
    for other in ("deepspeed", "pipelining"):  # their pipeline modules, from their own rules
        model = rulebook.load(other).data["pipeline_model"]
        excepted_modules += model["modules"]
        excepted_names += model["names"]
    # torch's P2P API called by the closure itself (a pipeline of its own, a vendored framework):
    # P2P this audit would have to judge
    excepted_names += [api["name"] for api in rulebook.load("torch").data.get("p2p_api", [])]
    allowed = set(data["packages"]) | set(sys.stdlib_module_names) | {"__future__"}
    used: set[str] = set()
    read = 0
    for module, tree in iter_closure(Path(path)):
        read += 1
        foreign = [name.split(".")[0] for name in foreign_imports(tree, module, Path(path))]
        if any(top not in allowed for top in foreign):
            return None
        if (uses_modules(tree, excepted_modules, excepted_names) or _imports_name(tree, excepted_names)
                or _runs_code(tree, data["dynamic"])):
            return None
        used |= {top for top in foreign if top in data["packages"]}
    if read >= MAX_MODULES:
        return None  # the closure was cut: a module not read may build one
    return read - 1, ", ".join(sorted(used)) or "none"


def _imports_name(tree: ast.Module, names: list[str]) -> bool:
    """Whether the file imports one of `names` (`from transformers import Trainer`)."""
    return any(isinstance(node, ast.ImportFrom) and any(a.name in names for a in node.names)
               for node in ast.walk(tree))


def _runs_code(tree: ast.Module, dynamic: list[str]) -> bool:
    """Whether the file calls what imports or runs code this reader does not see."""
    return any(isinstance(node, ast.Call) and dotted(node.func) in dynamic for node in ast.walk(tree))


def _import_line(tree: ast.Module, modules: list[str]) -> int:
    """The first line importing one of `modules`."""
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any(n == m or n.startswith(f"{m}.") for n in names for m in modules):
            return int(getattr(node, "lineno", 0))
    return 0
