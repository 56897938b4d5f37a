"""Whether an entry script's own code names a pipeline schedule entry (rules/stacks.toml
`[[schedule_entry]]`): a script rule that calls a script NOT A PIPELINE RUN by its name
(rules/megatron-bridge.toml `[[swift_script]] not_pipeline`, `examples/conversion/*.py`) holds
only where it does not. Megatron-Bridge's examples/conversion/hf_to_megatron_generate_text.py
imports and calls `get_forward_backward_func()(..., forward_only=True)`: at PP > 1 a forward-only
pipeline schedule with P2P, not a conversion. Naming is read from the script and its local
modules (stdlib ast); a script that cannot be read names nothing here, and the name rule does
not decide it (`names_no_schedule`); analysis/schedule_reach.py decides from the call graph
what it can.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

from auditor import rulebook
from auditor.config.entry_script import iter_closure, uses_or_imports
from auditor.config.entry_stack import modeled_roots
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import located_stat


def names_schedule(config: LaunchConfig) -> str | None:
    """The schedule entry (`module.name`) the entry script of `config` or a local module it
    imports names in an import or an attribute, or None (also where the script is not read)."""
    return _read(config)[1]


def names_no_schedule(config: LaunchConfig) -> bool:
    """The entry script of `config` and its local modules were read, name no schedule entry and
    build no other pipeline stack (`_stacked`): only then may a script rule call it NOT A
    PIPELINE RUN by its name (a `cd` the scratch config does not follow, a file absent here:
    not decided by the name)."""
    read, named = _read(config)
    if not read or named is not None:
        return False
    found = located_stat(config)
    return found is not None and not _stacked(Path(found[0].path).resolve(), found[1].st_mtime_ns)


def _read(config: LaunchConfig) -> tuple[bool, str | None]:
    found = located_stat(config)
    return (False, None) if found is None else _named(Path(found[0].path).resolve(), found[1].st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _named(script: Path, mtime_ns: int) -> tuple[bool, str | None]:
    """(whether the script and its closure were read and every use of an entry's name resolved,
    the schedule entry named). A name of an entry reached in a way not resolved here (a star
    import from the framework, an attribute of a framework module not known to hold it, a call of
    a name nothing in the file binds) is (False, None): not known to name none."""
    stop = modeled_roots()
    try:
        return named_in(tree for _, tree in iter_closure(script, stop))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return False, None


@functools.lru_cache(maxsize=32)
def _stacked(script: Path, mtime_ns: int) -> bool:
    """Whether the script or a local module it imports uses a pipeline stack other than
    megatron-core's schedules (rules/stacks.toml [training_step] `pipeline_modules`/
    `pipeline_names`: DeepSpeed's PipelineModule, torch.distributed.pipelining's schedules); a
    closure not read is taken to (a tools/checkpoint/*.py that trains DeepSpeed's PipelineModule
    with engine.train_batch() is no checkpoint tool)."""
    steps = rulebook.load("stacks").data["training_step"]
    try:
        return any(uses_or_imports(tree, steps["pipeline_modules"], steps["pipeline_names"])
                   for _, tree in iter_closure(script, modeled_roots()))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return True


def named_in(trees: Iterable[ast.Module]) -> tuple[bool, str | None]:
    """(whether every use of an entry's name in the modules was resolved, the schedule entry
    named): `_named` of the code given (config/no_training.py passes the code that can run)."""
    entries = [(e["module"], n.split(".")[0]) for e in rulebook.load("stacks").data["schedule_entry"]
               for n in e["names"]]
    unresolved = False
    for tree in trees:
        aliases = _aliases(tree)
        bound = _bound(tree)
        for node in ast.walk(tree):
            for m, n in entries:
                said = _names(node, m, n, aliases, bound)
                if said is True:
                    return True, f"{m}.{n}"
                unresolved = unresolved or said is None
    return not unresolved, None


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted module path it stands for (`import a.b.c as x`: x -> a.b.c;
    `from a.b import c [as x]`: x -> a.b.c, c perhaps a submodule or a re-exported name;
    `import a.b`: a -> a)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    root = a.name.split(".")[0]
                    out[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _bound(tree: ast.Module) -> set[str]:
    """Names the module binds anywhere (definitions, assignments, parameters, imports)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


def _resolve(expr: ast.expr, aliases: dict[str, str]) -> str | None:
    """The dotted path `expr` (a name or a chain of attributes) stands for through `aliases`,
    or None where its root is not an import."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in aliases:
        return None
    return ".".join([aliases[expr.id], *reversed(parts)])


def _names(node: ast.AST, module: str, name: str, aliases: dict[str, str], bound: set[str]) -> bool | None:
    """True where `node` names `name` of `module`: imports it from the module or a package above
    it that may re-export it (`from megatron.core.pipeline_parallel import
    get_forward_backward_func`, megatron-core pipeline_parallel/__init__.py), or reaches it as an
    attribute of that module or package, spelled in full, by its last part or through an import
    alias (`sched.NAME`, `pipeline_parallel.NAME`). None where it may name it and that is not
    resolved (a star import from the framework; `X.NAME` with X an import of the framework's
    package that is not such a module; a call of the bare NAME that nothing in the file binds).
    False otherwise: `model.train()` is not Megatron-LM's `train`."""
    top = module.split(".")[0]
    above = {module.rsplit(".", k)[0] for k in range(module.count(".") + 1)}
    if isinstance(node, ast.ImportFrom):
        if node.level or not node.module or node.module.split(".")[0] != top:
            return False
        if any(a.name == name for a in node.names):
            return True if node.module in above else None
        return None if any(a.name == "*" for a in node.names) else False
    if isinstance(node, ast.Attribute) and node.attr == name:
        base = ast.unparse(node.value)
        if base == module or base == module.rsplit(".", 1)[-1]:
            return True
        path = _resolve(node.value, aliases)
        if path is None:
            return False
        if path in above:
            return True
        return None if path.split(".")[0] == top else False
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
            and name not in bound):
        return None
    return False
