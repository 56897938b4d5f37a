"""A training script that pipelines with torch.distributed.pipelining itself (`torchrun train.py`
whose code builds a PipelineStage and steps a Schedule*): the run's stack is torch's pipelining,
not Megatron-LM's front end that torchrun's launcher pattern otherwise names.

Decided from what the entry script imports (rules/pipelining.toml `[pipeline_model]`), read with
the stdlib `ast`, never run. Such a run is read as launcher `pipelining SCRIPT`; its sources are
the script's folder and the installed torch (the schedules' code: which torch the cluster runs
stays --torch's and rules/torch.toml's to judge); its entry point is the script itself, run as
`__main__`, so that the schedule it builds and steps is the one the call graph follows. What the
script's calls state (init_process_group's backend) joins the config as the script's own values.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from auditor import rulebook
from auditor.config.entry_script import put_calls, uses_modules
from auditor.config.entry_stack import LAUNCHERS
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import entry_tree, locate
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.rulebook.frameworks import launched_by
from auditor.sources import SourceSet, resolve

RULES = "pipelining"
STACK = "pipelining"  # the launcher word rules/pipelining.toml's [framework] claims
# Launchers whose script may be a user's own pipelining code: torchrun's and python's
# (Megatron-LM's generic claim, rules/megatron-lm.toml), not a framework's own module.


def read_pipelining_script(launch: LaunchConfig) -> None:
    """Relabel a run whose entry script uses torch.distributed.pipelining (`pipelining SCRIPT`),
    with a note naming the import that decided it, and put what its calls state into
    `launch.entry_values`."""
    if not launched_by(launch.launcher, LAUNCHERS) or launched_by(launch.launcher, ["* pretrain_*.py"]):
        return
    read = entry_tree(launch)
    if read is None:
        return
    entry, tree = read
    data = rulebook.load(RULES).data
    model = data["pipeline_model"]
    used = _first_use(tree, model["modules"], model["names"])
    if used is None or not uses_modules(tree, model["modules"], model["names"]):
        return
    where = f"{launch.path}:{launch.command_line}"
    launch.diagnostics.append(Finding(
        "launch.front-end", "info",
        f"{entry.written} pipelines with torch.distributed.pipelining itself ({entry.path}:{used}): its "
        f"schedules are torch's, judged on torch's rules (rules/{RULES}.toml), not a Megatron-LM front end",
        where=where, detail={"front_end": "torch.distributed.pipelining", "launched": launch.launcher,
                             "script": entry.path}))
    launch.launcher = f"{STACK} {os.path.basename(entry.path)}"
    put_calls(launch, data.get("script_call", []), tree, entry.path)


def _first_use(tree: ast.Module, modules: list[str], names: list[str]) -> int | None:
    """The line of the script's first import from the pipelining modules."""
    lines = [n.lineno for n in ast.walk(tree)
             if isinstance(n, ast.ImportFrom) and n.module and any(
                 n.module == m or n.module.startswith(f"{m}.") for m in modules)
             or isinstance(n, ast.Import) and any(
                 a.name == m or a.name.startswith(f"{m}.") for a in n.names for m in modules)]
    return min(lines) if lines else None


def is_pipelining_script(launch: LaunchConfig) -> bool:
    return launched_by(launch.launcher, [f"{STACK} *"])


def script_sources(launch: LaunchConfig, srcs: list[SourceSet]) -> list[SourceSet]:
    """`srcs` with the script (its folder's modules) added where no target gives it; torch is
    added by titan.with_pipelining_torch, as for torchtitan."""
    if not is_pipelining_script(launch):
        return srcs
    entry, _ = locate(launch)
    if entry is None:
        return srcs
    here = Path(entry.path).resolve()
    if any(here.is_relative_to(s.root.resolve()) for s in srcs):
        return srcs
    try:
        return [resolve(str(here)), *srcs]
    except InputError:
        return srcs


def script_entry(launch: LaunchConfig) -> tuple[str, str] | None:
    """The entry point of a pipelining script's run: the script's own code, run as `__main__`
    (its `if __name__ == "__main__":` block is what torchrun runs)."""
    if not is_pipelining_script(launch):
        return None
    entry, _ = locate(launch)
    if entry is None:
        return None
    try:
        text = Path(entry.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return f"{entry.written} (run as __main__)", f"__name__ = '__main__'\n{text}"
