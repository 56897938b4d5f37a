"""A training script that pipelines with torch.distributed.pipelining itself (`torchrun train.py`
whose code builds a PipelineStage and steps a Schedule*): the run's stack is torch's pipelining,
not Megatron-LM's front end that torchrun's launcher pattern otherwise names.

Decided from what the entry script imports (rules/pipelining.toml `[pipeline_model]`), read with
the stdlib `ast`, never run. Such a run is read as launcher `pipelining SCRIPT`; its sources are
the script's folder and the installed torch (the schedules' code: which torch the cluster runs
stays --torch's and rules/torch.toml's to judge); its entry point is the script itself, run as
`__main__`, so that the schedule it builds and steps is the one the call graph follows. What the
script's calls state (init_process_group's backend) joins the config as the script's own values.

An entry read as Megatron-LM's front end only as a guess (`torchrun train.py`) that issues torch
P2P itself (config.own_p2p) is read the same way for its own ops: the entry and its local modules
are a source (`script_sources`) and the entry, run as `__main__`, an entry point beside the front
end's (`own_entry`), so that its sends and receives meet the same batching and laziness analysis
as a framework's.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from auditor import rulebook
from auditor.config.entry_script import iter_closure, put_calls, uses_modules
from auditor.config.entry_stack import LAUNCHERS, entry_read, modeled_roots, read_as_guess
from auditor.config.own_p2p import OwnP2P
from auditor.config.own_p2p import closure as own_closure
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import entry_tree, locate
from auditor.findings import Finding
from auditor.rulebook.frameworks import launched_by
from auditor.sources import SourceSet

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
    used = _pipelining_use(entry.path, model["modules"], model["names"])
    if used is None:
        return
    where = f"{launch.path}:{launch.command_line}"
    launch.diagnostics.append(Finding(
        "launch.front-end", "info",
        f"{entry.written} pipelines with torch.distributed.pipelining itself ({used[0]}:{used[1]}): its "
        f"schedules are torch's, judged on torch's rules (rules/{RULES}.toml), not a Megatron-LM front end",
        where=where, detail={"front_end": "torch.distributed.pipelining", "launched": launch.launcher,
                             "script": entry.path}))
    launch.launcher = f"{STACK} {os.path.basename(entry.path)}"
    put_calls(launch, data.get("script_call", []), tree, entry.path)


def _pipelining_use(path: str, modules: list[str], names: list[str]) -> tuple[str, int] | None:
    """(file, line) of the first import of torch's pipelining by the entry at `path`, or else by
    a local module it imports (entry_script.iter_closure, not into a framework the rules model):
    the schedule it builds there is the run's all the same."""
    try:
        for module, tree in iter_closure(Path(path), modeled_roots()):
            used = _first_use(tree, modules, names)
            if used is not None and uses_modules(tree, modules, names):
                return str(module), used
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None  # pyenv.read_entry says why the script is not read
    return None


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
    """`srcs` with the script added where no target gives it: a pipelining script's file (torch
    is added by titan.with_pipelining_torch, as for torchtitan), or, for an entry read as a
    Megatron-LM front end only as a guess that issues torch P2P itself (`own_p2p`), the entry
    and its local modules under its folder, so that its own ops are sites the scan judges."""
    own = own_p2p(launch)
    if not is_pipelining_script(launch) and own is None:
        return srcs
    entry, _ = locate(launch)
    if entry is None:
        return srcs
    here = Path(entry.path).resolve()
    if any(here.is_relative_to(s.root.resolve()) for s in srcs):
        return srcs
    if own is not None:
        return [_own_source(here, own[1]), *srcs]
    try:  # the script's local modules too: a schedule built in one is walked into
        return [_own_source(here, [p for p, _ in iter_closure(here, modeled_roots())]), *srcs]
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return srcs


def own_p2p(launch: LaunchConfig) -> tuple[OwnP2P, list[Path]] | None:
    """The P2P the entry and its local modules issue themselves (config.own_p2p) and the
    closure's files, where the run is read as Megatron-LM's front end only because its launcher
    names no framework (`torchrun train.py`) and they issue some; else None."""
    if not read_as_guess(launch):
        return None
    read = entry_read(launch, _closure_p2p)
    return None if read is None else read[1]


def _closure_p2p(path: str, mtime_ns: int, size: int) -> tuple[OwnP2P, list[Path]] | None:
    found, files = own_closure(path, mtime_ns, size, modeled_roots())
    return (found, files) if found.issues else None


def _own_source(script: Path, files: list[Path]) -> SourceSet:
    """The entry's folder as a source: the entry and the closure's files under it, each module
    named as the import spells it (`utils`, `model.layers`)."""
    root = script.parent
    listed = sorted({p.resolve().relative_to(root).as_posix() for p in files if p.resolve().is_relative_to(root)})
    return SourceSet.folder(script.stem, root, str(script), listed)


def own_entry(launch: LaunchConfig) -> tuple[str, str, str] | None:
    """The entry point of an entry issuing P2P itself (`own_p2p`), beside the front end's: (what
    it is, its module as its source names it, its text), run as `__main__` under that module's
    name so that the functions it calls are those whose sites the scan found."""
    if own_p2p(launch) is None:
        return None
    read = entry_text(launch)
    return None if read is None else (read[0], Path(read[1]).stem, read[2])


def script_entry(launch: LaunchConfig) -> tuple[str, str] | None:
    """The entry point of a pipelining script's run: the script's own code, run as `__main__`
    (its `if __name__ == "__main__":` block is what torchrun runs)."""
    if not is_pipelining_script(launch):
        return None
    read = entry_text(launch)
    return None if read is None else (read[0], f"__name__ = '__main__'\n{read[2]}")


def entry_text(launch: LaunchConfig) -> tuple[str, str, str] | None:
    """(what runs, the entry's path, its text): None where the entry is not found or not read."""
    entry, _ = locate(launch)
    if entry is None:
        return None
    try:
        text = Path(entry.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return f"{entry.written} (run as __main__)", str(entry.path), text
