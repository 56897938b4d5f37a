"""What a torch-launched Python entry runs on, from what it and its local modules import.

torchrun, `python -m torch.distributed.run/launch` and `python` name no framework: the rules
otherwise read such a run as Megatron-LM's front end. The entry's own imports say more, read
with the stdlib `ast` (entry_script.iter_closure), never run:
- the entry script imports a framework with a pipeline engine of its own that no rules model
  (nanotron, ColossalAI: rules/stacks.toml `[[own_pipeline]]`): the run is NOT COVERED
  (`own_pipeline`);
- every import is the standard library, a local module or a package that builds no pipeline
  (`[no_pipeline]`), used without the exceptions (DeepSpeed's PipelineModule, torch's
  pipelining, transformers' Trainer), no local code issues torch's P2P or may (config.own_p2p:
  a pipeline of its own, or a framework vendored beside the script, Megatron-LM's checkout) and
  nothing imports or runs code at run time: the run is
  no pipeline run (`builds_no_pipeline`, called by config.launch.runs_no_pipeline, the one place
  that decides it). Anything less certain is left to the analysis;
- the entry builds DeepSpeed's engine (deepspeed.initialize) or its PipelineModule: which engine
  runs is config.deepspeed_engine's to say, for every launcher;
- no module of the closure imports a stack the rules model (`modeled_packages`: megatron and
  its wrappers, DeepSpeed, torch's pipelining, torchtitan...) or issues torch's P2P (config.own_p2p:
  its ops are then judged, config.pipelining_script.own_entry), yet one
  imports a third-party package that is neither `[no_pipeline]` nor modelled (`fancylib.run(args)`,
  accelerate's loop): the stack is unknown (`unknown_stack`, rules/stacks.toml
  `[unknown_stack]`), INCONCLUSIVE, never a verdict on megatron-core's defaults;
- the entry is a Hydra app (`@hydra.main(config_path, config_name)`) no front end's rules read
  (a copy of verl's main is read as verl's: config/entry_copy.py): its settings are the config
  it composes, not Megatron-LM's flags on megatron-core's defaults: unknown just the same
  (`unknown_stack`, rules/stacks.toml `[hydra_entry]`);
- the entry is not read at all (a name not known statically, a file or module not found here):
  the stack is unknown just the same (`unread_entry`, rules/stacks.toml `[unread_entry]`), for
  `deepspeed SCRIPT` too, unless the script's name is a front end the rules know by name.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from pathlib import Path
from collections.abc import Callable
from typing import Any, TypeVar

from auditor import rulebook
from auditor.config.entry_script import (
    MAX_MODULES,
    calls,
    foreign_imports,
    iter_closure,
    parsed,
    uses_modules,
    uses_or_imports,
)
from auditor.config import own_p2p
from auditor.config.entry_absent import absent_here
from auditor.config.entry_copy import hydra_main
from auditor.config.model import LaunchConfig
from auditor.config.one_process import surely_one
from auditor.config.pyenv import locate, located_stat
from auditor.config.shell_command import starts_programs
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.rulebook.frameworks import frameworks, launched_by, modeled_packages

RULES = "stacks"
# The reader the rules give a launcher that names no framework (torchrun's, python's): the entry
# is read as Megatron-LM's front end, which is a guess where it imports no megatron.
GUESSED_STYLE = "megatron-lm"
# Launchers that name no framework: the entry's imports decide the stack (a cluster's srun or
# mpirun starting the Python entry itself is read as Megatron-LM's front end too: rules/megatron-lm.toml).
# Of those, the cluster's wrappers, which start any program (`srun docker run ...`): only a
# `.py` entry of theirs is a Python entry whose imports decide the stack.
WRAPPERS = ("srun *", "mpirun *", "mpiexec *")
# `deepspeed SCRIPT`: the script is DeepSpeed's user code (rules [[launcher]] deepspeed;
# config.deepspeed_entry reads it); Megatron-DeepSpeed's front end has rules of its own.
DEEPSPEED_LAUNCHERS = ("deepspeed *",)
LAUNCHERS = ("torchrun", "torchrun *", "python -m torch.distributed.*", "python", "python *", "python3",
             "python3 *", "srun *", "mpirun *", "mpiexec *")


def read_as_guess(launch: LaunchConfig) -> bool:
    """Whether the entry is read as Megatron-LM's front end only because its launcher names no
    framework; a script with a front end of its own (ChatLearn's entrypoint.py, whose Ray
    workers no call graph from it reaches) is read by that front end instead."""
    return launch.style == GUESSED_STYLE


def _entry(launch: LaunchConfig) -> Any:
    """The entry script found here (pyenv.EntryFile), or None."""
    if not launched_by(launch.launcher, LAUNCHERS):
        return None
    return locate(launch)[0]


def _located(launch: LaunchConfig) -> tuple[Any, os.stat_result] | None:
    """The entry script found here and its stat (pyenv.located_stat), or None."""
    return located_stat(launch) if launched_by(launch.launcher, LAUNCHERS) else None


_Found = TypeVar("_Found")


def entry_read(launch: LaunchConfig, reader: Callable[[str, int, int], _Found | None]) -> tuple[Any, _Found] | None:
    """The entry found here and what `reader` (cached on path, mtime, size) finds in it; None where
    there is no entry, it is not read (pyenv.read_entry says why) or `reader` finds nothing."""
    located = _located(launch)
    if located is None:
        return None
    entry, stat = located
    try:
        found = reader(entry.path, stat.st_mtime_ns, stat.st_size)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None
    return None if found is None else (entry, found)


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
            f"{import_line(tree, stack['modules'])} imports {stack['modules'][0]}): {stack['covers']}",
            where=f"{launch.path}:{launch.command_line}",
            detail={"stack": stack["name"], "decide": stack["decide"], "source": stack["source"]}))
        return


def packaged_entry(module: str) -> str | None:
    """What the run is where the launcher runs `module` of a framework's package that trains no
    pipeline (a rules file's `[[entry_module]]`: OpenRLHF's `openrlhf.cli.*`, started by `python
    -m`, `deepspeed --module` or behind `ray job submit --`), else None. The module's name says
    it: its file is in the cluster's installed package, not here. A `.py` path is the same
    program run by its file where it ends in one of the entry's `scripts` (DeepSpeed's
    zero_to_fp32.py, which the engine copies into each checkpoint it saves)."""
    for framework in frameworks():
        for entry in rulebook.load(framework.name).data.get("entry_module", []):
            if launched_by(module, entry["modules"]) or module.endswith(".py") and any(
                    _ends_in(module, tail) for tail in entry.get("scripts", ())):
                return str(entry["not_pipeline"]).replace("{module}", module)
    return None


def _ends_in(path: str, tail: str) -> bool:
    """Whether `path`'s last parts are `tail`'s (`$HOME/DeepSpeed/deepspeed/checkpoint/x.py`
    ends in `deepspeed/checkpoint/x.py`)."""
    parts, wanted = os.path.normpath(path).split("/"), tail.split("/")
    return parts[-len(wanted):] == wanted


def builds_no_pipeline(launch: LaunchConfig) -> str | None:
    """What the run is where its entry surely builds no pipeline (see the module's docstring),
    else None."""
    read = entry_read(launch, _pipeline_free)
    if read is None:
        return None
    entry, (shown, packages) = read
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
    allowed = set(data["packages"]) | set(sys.stdlib_module_names) | {"__future__"}
    used: set[str] = set()
    read = 0
    for module, tree in iter_closure(Path(path)):
        read += 1
        foreign = [name.split(".")[0] for name in foreign_imports(tree, module, Path(path))]
        if any(top not in allowed for top in foreign):
            return None
        # torch's P2P called by the closure itself (a pipeline of its own, a vendored framework),
        # or what may be (config.own_p2p): P2P this audit would have to judge
        if (uses_or_imports(tree, excepted_modules, excepted_names) or runs_code(tree, data["dynamic"], module)
                or own_p2p.read(module.read_text(encoding="utf-8"), str(module)).may):
            return None
        used |= {top for top in foreign if top in data["packages"]}
    if read >= MAX_MODULES:
        return None  # the closure was cut: a module not read may build one
    return read - 1, ", ".join(sorted(used)) or "none"


def runs_code(tree: ast.Module, dynamic: list[str], path: Path | None = None) -> bool:
    """Whether the file calls what loads or runs code this reader does not see: one of `dynamic`
    by the name written (exec, eval, importlib.import_module), or a call that starts a process
    (`starts_programs`, through the local modules beside `path`). An aliased `import_module` is not yet read (Pai-Megatron-Patch's
    distributed_checkpoints_convertor/impl/convert.py: its manifest rows rest on that)."""
    return loads_code(tree, dynamic) or bool(starts_programs(tree, path))


def loads_code(tree: ast.Module, dynamic: list[str]) -> bool:
    """Whether the file calls one of `dynamic` (rules/stacks.toml: exec, eval, import_module,
    runpy), which load or run Python not seen here, by the name written."""
    return any(written in dynamic for _, written, _ in calls(tree))


def import_line(tree: ast.Module, modules: list[str]) -> int:
    """The first line importing one of `modules`."""
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any(n == m or n.startswith(f"{m}.") for n in names for m in modules):
            return int(getattr(node, "lineno", 0))
    return 0


class UnknownStack(InputError):
    """The entry hands the run to a package no rules model (`unknown_stack`): for `scan` an
    undecided run (INCONCLUSIVE, exit 1) saying what runs and `decide`, the step that decides it;
    for a command that needs a modelled pipeline (simulate), bad input."""

    def __init__(self, path: str, what: str, decide: str, config: LaunchConfig | None = None) -> None:
        super().__init__(path, f"stack unknown: {what}")
        self.what = what
        self.decide = decide
        self.config = config


def modeled_roots() -> frozenset[str]:
    """The top-level import packages of the stacks the rules model (`modeled_packages`): where a
    reader of the entry's own code stops, their code being the framework's, not the entry's."""
    return frozenset(m.split(".")[0] for m in modeled_packages())


def unknown_stack(launch: LaunchConfig) -> None:
    """A `launch.unknown-stack` finding where the entry and its local modules import no stack the
    rules model and call no torch P2P themselves, but import a package neither `[no_pipeline]`
    nor modelled: what the run is and the step that decides it (config.launch raises
    UnknownStack on it). A run already said to be no pipeline, not covered, or of an unknown stack
    (a reader that knows more said why: the DeepSpeed engine's) is left as said."""
    if any(d.kind in ("launch.not-pipeline", "launch.not-covered", "launch.unknown-stack")
           for d in launch.diagnostics):
        return
    if not read_as_guess(launch):
        return
    located = _located(launch)
    if located is None:
        return
    entry, stat = located
    name = entry.written if launch.script_module else os.path.basename(entry.written)
    hydra = hydra_main(entry.path, launch.path)
    if hydra is not None:  # its settings are the config it composes, which no front end's rules read
        data = rulebook.load(RULES).data["hydra_entry"]
        packages = f"a Hydra app ({hydra.shown()})"
        what = f"{name} is a Hydra app: {hydra.shown()} composes its settings, {data['covers']}"
        _undecided(launch, name, packages, what, data, [])
        return
    try:
        found = _unmodelled(entry.path, stat.st_mtime_ns, stat.st_size)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return  # pyenv.read_entry says why the script is not read
    if found is None:
        return
    unknown, local = found
    data = rulebook.load(RULES).data["unknown_stack"]
    first, (where, line) = next(iter(unknown.items()))
    packages = ", ".join(unknown)
    what = (f"{name} runs {packages}, which no rules model ({where}:{line} imports {first}; neither "
            f"it nor the {local} local module(s) it imports import megatron or another stack the rules "
            f"model, or call torch's P2P API): {data['covers']}")
    _undecided(launch, name, packages, what, data, list(unknown))


def _undecided(launch: LaunchConfig, name: str, packages: str, what: str, data: dict[str, Any],
               unknown: list[str]) -> None:
    """The entry's stack is unknown: a `launch.unknown-stack` finding (INCONCLUSIVE) saying `what`
    and the rules' `decide`; in one process, no pipeline run (a single rank has no peer)."""
    if surely_one(launch):  # config.one_process: a single rank, whatever the package runs in it
        launch.diagnostics.append(Finding(
            "launch.not-pipeline", "info",
            f"{name} runs {packages}, which no rules model, in one process "
            f"({launch.world_source['nproc_per_node']}): a single rank has no peer, so no "
            "point-to-point op can run", where=f"{launch.path}:{launch.command_line}",
            detail={"command": launch.launcher}))
        return
    decide = data["decide"].replace("COMMAND", f"{launch.launcher} ...")
    launch.diagnostics.append(Finding(
        "launch.unknown-stack", "warning", what, where=f"{launch.path}:{launch.command_line}",
        detail={"undecided": f"what {packages} runs", "decide": decide, "packages": unknown}))


@functools.lru_cache(maxsize=16)
def _unmodelled(path: str, mtime_ns: int, size: int) -> tuple[dict[str, tuple[str, int]], int] | None:
    """({package: (file, line) first importing it}, local modules read) for the third-party
    packages of the closure of the entry at `path` that are neither `[no_pipeline]` nor modelled,
    where no module imports a modelled stack or issues torch's P2P (config.own_p2p); else None (also where the
    closure was cut: a module not read may import megatron). Code imported at run time
    (`importlib.import_module`) does not make the stack any better known: still unknown."""
    modeled = modeled_packages()
    data = rulebook.load(RULES).data["no_pipeline"]
    allowed = set(data["packages"]) | set(sys.stdlib_module_names)
    allowed |= {"__future__"} | {m.split(".")[0] for m in modeled}
    excepted = (list(data["except_modules"]), list(data["except_names"]))
    unknown: dict[str, tuple[str, int]] = {}
    read = 0
    for module, tree in iter_closure(Path(path)):
        read += 1
        if uses_or_imports(tree, modeled, []) or own_p2p.read(module.read_text(encoding="utf-8"), str(module)).issues:
            return None  # a modelled stack, or P2P of its own that the scan judges (config.own_p2p)
        for name in foreign_imports(tree, module, Path(path)):
            top = name.split(".")[0]
            if top not in allowed and top not in unknown:
                unknown[top] = (module.name, import_line(tree, [top]))
        for name, line in _excepted(tree, excepted):  # transformers' Trainer: its loop is what runs
            unknown.setdefault(name, (module.name, line))
    if read >= MAX_MODULES or not unknown:
        return None
    return unknown, read - 1


def _excepted(tree: ast.Module, excepted: tuple[list[str], list[str]]) -> list[tuple[str, int]]:
    """(what, line) of each import of a `[no_pipeline]` package's exception (`from transformers
    import Trainer`, `transformers.trainer`): a training loop of its own (the Trainer's
    Accelerator, which may turn accelerate's Megatron-LM plugin on) no rules model."""
    modules, names = excepted
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out += [(f"{node.module}.{a.name}", node.lineno) for a in node.names
                    if a.name in names or any(_under(f"{node.module}.{a.name}", m) or _under(node.module, m) for m in modules)]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if any(_under(a.name, m) for m in modules)]
    return out


def _under(name: str, module: str) -> bool:
    return name == module or name.startswith(f"{module}.")


def unread_entry(launch: LaunchConfig) -> None:
    """A `launch.unknown-stack` finding where the entry a torch launcher (read as Megatron-LM's
    front end only as a guess) or deepspeed runs is not read (pyenv.locate says why): its imports
    decide the stack, so neither megatron-core's defaults nor DeepSpeed's pipeline engine is
    judged. An entry named as a front end the rules know by name keeps that front end, unless
    the job is meant to start here and the file is not here (config.entry_absent.absent_here):
    a file not read is never CLEAN."""
    if any(d.kind in ("launch.not-pipeline", "launch.not-covered", "launch.unknown-stack")
           for d in launch.diagnostics):
        return
    guessed = read_as_guess(launch) and launched_by(launch.launcher, LAUNCHERS)
    if not (guessed or launched_by(launch.launcher, DEEPSPEED_LAUNCHERS)):
        return
    if _named_front_end(launch) and not absent_here(launch):
        return
    if launched_by(launch.launcher, WRAPPERS) and not str(launch.script).endswith(".py"):
        return  # `srun docker ...`: a program, not a Python entry; the launcher's rules judge it
    entry, why = locate(launch)
    if entry is not None or not why:
        return  # read (or no entry at all)
    data = rulebook.load(RULES).data["unread_entry"]
    command = f"{launch.launcher.split()[0]} ... ENTRY ..."
    if isinstance(launch.script, str):
        written = launch.script.replace(".", "/") + ".py" if launch.script_module else launch.script
        decide = data["decide_file"].replace("FILE", written).replace("COMMAND", command)
    else:
        decide = data["decide_name"].replace("COMMAND", command)
    kind = "`-m` module" if launch.script_module else "training script"
    launch.diagnostics.append(Finding(
        "launch.unknown-stack", "warning",
        f"`{launch.launcher}`: the {kind} is not read ({why}): {data['covers']}",
        where=f"{launch.path}:{launch.command_line}",
        detail={"undecided": "the entry the job runs", "decide": decide}))


def _named_front_end(launch: LaunchConfig) -> bool:
    """Whether the command names a front end the rules know by its script's name: a
    Megatron-LM stage's `launchers` (`torchrun pretrain_*.py`)."""
    named = [pattern for stage in rulebook.load(GUESSED_STYLE).data.get("stage", [])
             for pattern in stage.get("launchers", [])]
    return launched_by(launch.launcher, named)
