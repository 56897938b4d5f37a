"""Which DeepSpeed engine an entry runs, decided from what it and its local modules import: the
one place that reads it, for `deepspeed SCRIPT` (config.deepspeed_entry) and for the launchers
that name no framework (torchrun, python, a cluster's mpirun or srun: `deepspeed_pipeline`,
`deepspeed_engine` below).

deepspeed.initialize builds the PipelineEngine only for a PipelineModule (rules/deepspeed.toml
[pipeline_model]), whatever launcher starts the ranks. So the closure (stdlib `ast`, never run)
decides, in this order (`Engine.reading`):
- it names DeepSpeed's PipelineModule: the pipeline engine (`pipeline`);
- it imports another stack the rules model (megatron, torch's pipelining...), names torch's P2P
  API itself (a hand-written stage loop, a vendored Megatron), one of rules/stacks.toml
  [no_pipeline]'s exceptions (transformers' Trainer), runs code not read here (importlib, runpy,
  exec of a file's text, another program), or imports a module resolved to none this reader
  knows (a package of no rules, a module found only through a `sys.path` edit): what runs is not
  DeepSpeed's engine by its code, and no PipelineEngine runs either (`undecided`, naming it);
- else every import is the standard library, a local file read, DeepSpeed or a package
  [no_pipeline] lists: DeepSpeed's data-parallel engine (ZeRO) at most, no pipeline (`zero`).
An allow-list: a module not resolved never reads as "no other stack".
"""

from __future__ import annotations

import ast
import copy
import functools
import os
import sys
from pathlib import Path
from collections.abc import Callable
from typing import Any, NamedTuple

from auditor import rulebook
from auditor.config.entry_script import (
    ANCESTORS, MAX_MODULES, calls, dotted, foreign_imports, iter_closure, uses_modules, uses_or_imports)
from auditor.config.entry_stack import RULES, entry_read, import_line, modeled_packages, read_as_guess
from auditor.config.model import LaunchConfig
from auditor.config.shell_command import starts_programs
from auditor.findings import Finding

Where = tuple[str, int]  # (file relative to the entry's folder, line)


class Engine(NamedTuple):
    """What the closure of an entry does with DeepSpeed, and what else it runs."""

    pipeline: Where | None  # first use of its PipelineModule
    engine: Where | None  # first deepspeed.initialize
    stack: tuple[str, str, int] | None  # (what, file, line): another stack the rules model, imported
    other: tuple[str, str, int] | None  # (what, file, line): else something the engine reading cannot vouch for
    modules: tuple[str, ...]  # the local modules read, relative to the entry's folder

    def reading(self) -> str:
        """`pipeline`, `undecided` (see `other`) or `zero`: the one decision (module docstring)."""
        if self.pipeline is not None:
            return "pipeline"
        return "undecided" if self.stack or self.other else "zero"

    def beyond(self) -> tuple[str, str, int]:
        """(what, file, line) the engine reading cannot vouch for, of an `undecided` closure."""
        found = self.stack or self.other
        assert found is not None
        return found


@functools.lru_cache(maxsize=16)
def engine_of(path: str, mtime_ns: int, size: int) -> Engine | None:
    """The `Engine` of the entry at `path`; None where the closure was cut (a module not read may
    import anything). Cached on (path, mtime, size): each candidate command asks again."""
    data = rulebook.load("deepspeed").data
    model = data["pipeline_model"]
    own = set(data["framework"]["packages"]) | set(model["modules"])
    others = [m for m in modeled_packages() if m.split(".")[0] not in own]
    stacks = rulebook.load(RULES).data["no_pipeline"]
    p2p = [api["name"] for api in rulebook.load("torch").data.get("p2p_api", [])]
    excepted = (stacks["except_modules"], stacks["except_names"])
    allowed = set(stacks["packages"]) | set(stacks["modules"]) | set(sys.stdlib_module_names) | {"__future__"} | own
    entry = Path(path)
    pipeline: Where | None = None
    engine: Where | None = None
    stack: tuple[str, str, int] | None = None
    other: tuple[str, str, int] | None = None
    modules: list[str] = []
    for module, whole in iter_closure(entry):
        shown = os.path.relpath(module, entry.parent)
        tree = _without(whole, stacks.get("inert_names", []))
        if module != entry:
            modules.append(shown)
        if pipeline is None and uses_modules(tree, model["modules"], model["names"]):
            pipeline = (shown, import_line(tree, model["modules"]) or _name_line(tree, model["names"]))
        if engine is None:
            engine = next(((shown, node.lineno) for node, _, imported in calls(tree)
                           if imported in model["engine"]), None)
        imported = next((m for m in others if uses_or_imports(tree, [m], [])), None)
        if stack is None and imported is not None:
            stack = (f"imports {imported}, a stack the rules model", shown, import_line(tree, [imported]))
        if other is None:
            other = _beyond(tree, module, entry, shown, p2p, excepted, allowed, stacks)
    if len(modules) + 1 >= MAX_MODULES:
        return None
    return Engine(pipeline, engine, stack, other, tuple(sorted(modules)))


def _beyond(tree: ast.Module, module: Path, entry: Path, shown: str, p2p: list[str],
            excepted: tuple[list[str], list[str]], allowed: set[str],
            stacks: dict[str, Any]) -> tuple[str, str, int] | None:
    """What of this module but another modelled stack the engine reading cannot vouch for, as
    (what, file, line), else None."""
    if uses_or_imports(tree, [], p2p):
        return "names torch's P2P API itself (its own sends)", shown, _name_line(tree, p2p) or _from_line(tree, p2p)
    if uses_or_imports(tree, *excepted):
        return ("uses one of rules/stacks.toml [no_pipeline]'s exceptions (a Trainer, torch's pipelining)",
                shown, import_line(tree, excepted[0]) or _name_line(tree, excepted[1]) or _from_line(tree, excepted[1]))
    known = _known(module, entry, allowed)
    for name in foreign_imports(_fallbacks_dropped(tree, known), module, entry):
        if not known(name):
            return (f"imports {name}, resolved to no local file, the standard library or a package "
                    f"rules/{RULES}.toml [no_pipeline] lists"), shown, import_line(tree, [name])
    line = unseen_code(tree, stacks["dynamic"], stacks["runs_text"])
    if line:
        return "runs code not read here (a module loaded by name, a file's text, another program)", shown, line
    return None


def _known(module: Path, entry: Path, allowed: set[str]) -> Callable[[str], bool]:
    """Whether an absolute import `foreign_imports` leaves is still known: `allowed` (or a module
    of it), or a local namespace package (a folder without __init__.py: its modules are read as
    the closure imports them)."""
    roots = [module.parent, entry.parent, *list(entry.parent.parents)[:ANCESTORS]]

    def known(name: str) -> bool:
        return (any(name == a or name.startswith(f"{a}.") for a in allowed)
                or any((root / name.replace(".", "/")).is_dir() for root in roots))
    return known


def _fallbacks_dropped(tree: ast.Module, known: Callable[[str], bool]) -> ast.Module:
    """`tree` less the `except ImportError:` handlers of a `try:` whose imports are all known (the
    Python 2 fallback `from urlparse import urlparse` after `from urllib.parse import urlparse`,
    DeepSpeedExamples' bing_bert turing/file_utils.py:24-27): such a handler never runs."""
    caught = {"ImportError", "ModuleNotFoundError"}

    class Drop(ast.NodeTransformer):
        def visit_Try(self, node: ast.Try) -> ast.AST:
            self.generic_visit(node)
            imported = [a.name for n in node.body for m in ast.walk(n) if isinstance(m, ast.Import) for a in m.names]
            imported += [m.module or "" for n in node.body for m in ast.walk(n)
                         if isinstance(m, ast.ImportFrom) and not m.level]
            if imported and all(known(name) for name in imported):
                node.handlers = [h for h in node.handlers if not (
                    {dotted(t) for t in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])
                     if t is not None} & caught)]
            return node  # read by ast.walk only, never compiled
    return Drop().visit(copy.deepcopy(tree))


def _without(tree: ast.Module, inert: list[str]) -> ast.Module:
    """`tree` less its `from X import Y` statements that import only names of `inert` (rules/
    stacks.toml [no_pipeline] `inert_names`), which the reading takes as building nothing."""
    if not inert:
        return tree

    class Drop(ast.NodeTransformer):
        def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
            if not node.level and node.module and all(f"{node.module}.{a.name}" in inert for a in node.names):
                return ast.Pass()
            return node
    return Drop().visit(copy.deepcopy(tree))


def unseen_code(tree: ast.Module, dynamic: list[str], runs_text: list[str]) -> int:
    """The first line that loads or runs code this reader does not see: a `dynamic` call (exec,
    importlib.import_module, runpy) by the name written, but an exec/eval (`runs_text`) of text
    the file itself builds from its own string literals (a namedtuple-style class template:
    DeepSpeedExamples' bing_bert turing/utils.py:153), or a call starting a program; else 0."""
    for node, written, _ in calls(tree):
        if written in dynamic and not (written in runs_text and node.args and _built_here(tree, node.args[0])):
            return node.lineno
    started = starts_programs(tree)
    return getattr(started[0].node, "lineno", 1) if started else 0


def _built_here(tree: ast.Module, node: ast.expr, depth: int = 3) -> bool:
    """Whether `node` is text the file builds from its own literals: a string literal, an
    f-string, `TEMPLATE.format(...)` or `TEMPLATE % ...`, or a name every assignment of which is
    one (not `open(f).read()`: a file's text)."""
    if depth < 0:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _built_here(tree, node.func.value, depth - 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return _built_here(tree, node.left, depth - 1) and (
            isinstance(node.op, ast.Mod) or _built_here(tree, node.right, depth - 1))
    if isinstance(node, ast.Name):
        values = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets)]
        stores = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == node.id
                     and isinstance(n.ctx, ast.Store))
        return bool(values) and len(values) == stores and all(_built_here(tree, v, depth - 1) for v in values)
    return False


def _name_line(tree: ast.Module, names: list[str]) -> int:
    """The first line naming one of `names`, as an attribute (`deepspeed.pipe.PipelineModule(...)`)
    or bare (`from deepspeed import PipelineModule`, then `PipelineModule(...)`)."""
    return min((int(getattr(n, "lineno", 0)) for n in ast.walk(tree)
                if isinstance(n, ast.Attribute) and n.attr in names or isinstance(n, ast.Name) and n.id in names),
               default=0)


def _from_line(tree: ast.Module, names: list[str]) -> int:
    """The first line importing one of `names` by name (`from torch.distributed import isend`)."""
    return min((n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and any(a.name in names for a in n.names)), default=0)


def zero_engine(launcher: str, written: str, modules: int) -> str:
    """What a run is whose entry `written` and its `modules` local modules never build DeepSpeed's
    PipelineModule and import nothing else that could pipeline: DeepSpeed's data-parallel engine,
    whichever launcher starts the ranks."""
    model = rulebook.load("deepspeed").data["pipeline_model"]
    return (f"`{launcher}` trains with DeepSpeed's data-parallel engine (ZeRO), not its pipeline: "
            f"{written} and the {modules} local module(s) it imports never import "
            f"{' or '.join(model['modules'])}, so deepspeed.initialize gets no {model['names'][0]} "
            f"({model['source']}: `{model['code']}`), and import only the standard library, DeepSpeed "
            f"and packages that build no pipeline (rules/{RULES}.toml [no_pipeline])")


def undecided(launch: LaunchConfig, written: str, engine: Engine) -> None:
    """A `launch.unknown-stack` finding (INCONCLUSIVE) where the entry never builds DeepSpeed's
    PipelineModule, so no PipelineEngine runs, but runs something the engine reading cannot vouch
    for (`Engine.other`): that is what would be judged, and it is not read here."""
    what, where, line = engine.beyond()
    data = rulebook.load(RULES).data["deepspeed_no_pipeline_module"]
    command = launch.launcher.split()[0]
    _unknown_stack(launch, f"{written} never builds DeepSpeed's PipelineModule, so deepspeed.initialize "
                           f"builds no PipelineEngine, but {where}:{line} {what}: {data['covers']}",
                   f"what {written} runs besides DeepSpeed ({where}:{line})",
                   data["decide"].replace("COMMAND", f"{command} ..."),
                   [what.split()[1].rstrip(",")] if what.startswith("imports ") else [])


def _unknown_stack(launch: LaunchConfig, message: str, undecided: str, decide: str, packages: list[str]) -> None:
    """The one shape of this module's `launch.unknown-stack` finding (INCONCLUSIVE), at the command."""
    launch.diagnostics.append(Finding(
        "launch.unknown-stack", "warning", message, where=f"{launch.path}:{launch.command_line}",
        detail={"undecided": undecided, "decide": decide, "packages": packages}))


def _guessed(launch: LaunchConfig) -> tuple[Any, Engine] | None:
    """The entry and its Engine, for a torch launcher's run read as Megatron-LM's front end only
    as a guess and not yet said to be anything else; None otherwise."""
    if any(d.kind in ("launch.not-pipeline", "launch.not-covered", "launch.unknown-stack")
           for d in launch.diagnostics) or not read_as_guess(launch):
        return None
    return entry_read(launch, engine_of)


def deepspeed_pipeline(launch: LaunchConfig) -> None:
    """A `launch.unknown-stack` finding where a torch launcher's entry, read as Megatron-LM's
    front end only as a guess, builds DeepSpeed's PipelineModule and imports no other stack the
    rules model (rules/stacks.toml [torch_launched_deepspeed]): DeepSpeed's pipeline engine runs,
    whose P2P the guessed reading does not see (`torchrun eval.py` of an eval_batch loop read
    CLEAN with 0 sites). A run already said to be something else is left as said."""
    read = _guessed(launch)
    if read is None or read[1].pipeline is None or read[1].stack:
        return
    entry, (where, line) = read[0], read[1].pipeline
    data = rulebook.load(RULES).data["torch_launched_deepspeed"]
    name = entry.written if launch.script_module else os.path.basename(entry.written)
    _unknown_stack(launch, f"{name} builds DeepSpeed's PipelineModule ({where}:{line}) and imports no "
                           f"other stack the rules model: {data['covers']}",
                   f"the pipeline {name} runs on DeepSpeed's engine",
                   data["decide"].replace("COMMAND", f"{entry.written} ..."), ["deepspeed"])


def deepspeed_engine(launch: LaunchConfig) -> None:
    """Where the entry of a launcher that names no framework (torchrun, python, a cluster's mpirun
    or srun), read as Megatron-LM's front end only as a guess, builds DeepSpeed's engine itself
    (rules/deepspeed.toml [pipeline_model] `engine`) and never its PipelineModule: a
    `launch.not-pipeline` finding where the closure reads `zero` (`Engine.reading`), the reading
    `deepspeed SCRIPT` gets, not megatron-core's schedules on their defaults; INCONCLUSIVE
    naming what it cannot vouch for where `undecided`, but another stack the rules model, whose
    reading applies."""
    read = _guessed(launch)
    if read is None:
        return
    entry, found = read
    if found.pipeline is not None or found.engine is None or found.stack:  # another stack: its reading
        return
    if found.reading() == "undecided":
        undecided(launch, os.path.basename(entry.written), found)
        return
    where, line = found.engine
    launch.diagnostics.append(Finding(
        "launch.not-pipeline", "info",
        f"{zero_engine(launch.launcher, entry.written, len(found.modules))} (deepspeed.initialize at "
        f"{where}:{line} builds the engine, whichever launcher starts the ranks; the entry imports "
        "no megatron)", where=f"{launch.path}:{launch.command_line}",
        detail={"command": launch.launcher, "modules": list(found.modules)}))
