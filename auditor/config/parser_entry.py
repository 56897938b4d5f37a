"""Whether a training script of any name builds Megatron-LM's parser, by what it calls: one of
the parser's entries (`pretrain`, `initialize_megatron`, `parse_args`) bound from Megatron-LM's
own modules (rules/megatron-lm.toml [parser_entry]). Such a script is Megatron-LM's front end
wherever it lies: Pai-Megatron-Patch's finetune_*.py and evaluate_*.py import Megatron-LM from a
submodule a plain clone lacks. A `pretrain` of its own, or another package's, is not (issue 22
items 6 and 9), unless that package is the script's own checkout's and its function itself calls
one of the parser's entries (Pai-Megatron-Patch's megatron_patch.training.pretrain runs
`initialize_megatron` first)."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.bash.absent import checkout_root
from auditor.config import own_p2p
from auditor.config.entry_script import parsed, uses_or_imports
from auditor.rulebook.frameworks import modeled_packages


@functools.cache
def _rule() -> dict[str, Any]:
    rule: dict[str, Any] = rulebook.load("megatron-lm").data["parser_entry"]
    return rule


def entry_calls() -> frozenset[str]:
    """The calls that build Megatron-LM's parser."""
    return frozenset(_rule()["calls"])


def parse_time_bases() -> frozenset[str]:
    """The base classes whose subclasses' code runs when the parser parses, not when it is built."""
    return frozenset(_rule()["parse_time_bases"])


def parse_time_methods() -> frozenset[str]:
    """The methods of such a class that run while the parser parses (the rest run when it is built)."""
    return frozenset(_rule()["parse_time_methods"])


def calls_parser_entry(script: Path) -> bool:
    """Whether `script` calls one of the parser's entries bound from Megatron-LM's modules:
    `from MODULE import NAME [as X]` then `X(...)`, or `MODULE.NAME(...)` of an imported MODULE;
    or a function of its own checkout's package that does so (`_own_function_builds`)."""
    tree = _script_tree(script)
    if tree is None:
        return False
    if _calls_entry(tree, tree):
        return True
    called = _called_names(tree)
    modules = set(_rule()["modules"])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module and node.module not in modules:
            for alias in node.names:
                if (alias.asname or alias.name) in called and \
                        _own_function_builds(script, node.module, alias.name):
                    return True
    return False


def builds_none(script: Path) -> bool:
    """Whether `script` surely builds no Megatron-LM parser: it calls no parser entry, and every
    name it calls from a `from MODULE import NAME` is read and calls none either -- MODULE in the
    standard library or one of Megatron-LM's (only the entries build the parser), or a file python
    finds beside the script (sys.path[0]) or in its checkout's packages, whose top-level function
    NAME calls nothing it imports. An installed package's function, a relative import or a local
    module imported whole is not read: not known to build none (its command line is then checked
    as Megatron-LM's). After the review input where train.py runs `from helper import go` and the
    helper.py beside it calls megatron.training.pretrain."""
    tree = _script_tree(script)
    if tree is None:
        return False
    if _calls_entry(tree, tree):
        return False
    called = _called_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(_local(script, a.name) for a in node.names):
            return False
        if not isinstance(node, ast.ImportFrom) or not {a.asname or a.name for a in node.names} & called:
            continue
        if node.level or not node.module:
            return False
        if node.module.split(".")[0] in sys.stdlib_module_names or node.module in _rule()["modules"]:
            continue
        file = _local(script, node.module)
        if file is None or not all(_reads_none(file, a.name) for a in node.names if (a.asname or a.name) in called):
            return False
    return True


def _script_tree(script: Path) -> ast.Module | None:
    """The parsed `script`; None where it cannot be read or parsed (then nothing is claimed of it)."""
    try:
        return parsed(script.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None


def _called_names(tree: ast.AST) -> set[str]:
    """The bare names `tree` calls that it does not define itself: the ones an import may bind."""
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return {c.func.id for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)} - own


def _local(script: Path, module: str) -> Path | None:
    """The file python imports `module` from where it is the script's own: beside the script
    (sys.path[0]) or under its checkout's root through regular packages; None otherwise."""
    beside = module_beside(script.parent, module)
    if beside is not None:
        return beside
    parts = module.split(".")
    root = checkout_root(str(script))
    if root is None or not all((root / Path(*parts[:i])).joinpath("__init__.py").is_file()
                               for i in range(1, len(parts))):
        return None
    return module_beside(root, module)


def module_beside(folder: Path, module: str) -> Path | None:
    """The file `import module` finds in `folder` (the script's, which python searches first,
    sys.path[0]; or a root on sys.path): `a.b` is `folder/a/b.py`; None where there is none."""
    parts = module.split(".")
    file = folder / Path(*parts[:-1]) / f"{parts[-1]}.py"
    return file if file.is_file() else None


def _reads_none(file: Path, name: str) -> bool:
    """Whether `file` defines a top-level function `name` that calls no name its module imports
    (one step: what it calls is read no further) and so no parser entry."""
    tree = _script_tree(file)
    if tree is None:
        return False
    body = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if body is None:
        return False
    imported = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    return not any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in imported
                   or isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                   and ast.unparse(c.func.value).split(".")[0] in imported
                   for c in ast.walk(body))


def _calls_entry(scope: ast.AST, tree: ast.Module) -> bool:
    """Whether `scope` (the module, or one function of it) calls a parser entry bound from
    Megatron-LM's modules by an import anywhere in `tree` (a function-local import included)."""
    modules, calls = set(_rule()["modules"]), entry_calls()
    names: set[str] = set()  # the module's names for an entry
    holders: set[str] = set()  # the module's names for a Megatron-LM module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module in modules:
            names |= {a.asname or a.name for a in node.names if a.name in calls}
            holders |= {a.asname or f"{node.module}.{a.name}" for a in node.names
                        if f"{node.module}.{a.name}" in modules}
        elif isinstance(node, ast.Import):
            holders |= {a.asname or a.name for a in node.names if a.name in modules}
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for call in (n for n in ast.walk(scope) if isinstance(n, ast.Call)):
        func = call.func
        if isinstance(func, ast.Name) and func.id in names - own:
            return True
        if isinstance(func, ast.Attribute) and func.attr in calls and ast.unparse(func.value) in holders:
            return True
    return False


def _own_function_builds(script: Path, module: str, name: str) -> bool:
    """Whether `module`, a file of the script's own checkout (`pkg/mod.py` under the checkout
    root, a regular package), defines a top-level function `name` whose body calls one of the
    parser's entries bound from Megatron-LM's modules. A package the checkout lacks, a class, or
    a function that only passes the call on is not read (no Megatron-LM parser is claimed)."""
    root = checkout_root(str(script))
    if root is None:
        return False
    parts = module.split(".")
    if not all((root / Path(*parts[:i])).joinpath("__init__.py").is_file() for i in range(1, len(parts))):
        return False
    file = root / Path(*parts[:-1]) / f"{parts[-1]}.py"
    if not file.is_file():
        return False
    tree = _script_tree(file)
    if tree is None:
        return False
    body = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    return body is not None and _calls_entry(body, tree) and not _changes_the_run(tree)


def _changes_the_run(tree: ast.Module) -> bool:
    """Whether the module may run other than Megatron-LM's parser with its defaults says: it
    writes a P2P-relevant key (rules/megatron-core.toml [config_attribute]: `config.batch_p2p_comm
    = True`, `args.X = ...`, or any `setattr`), imports a stack other than Megatron's (DeepSpeed's
    PipelineModule, torch.distributed.pipelining: rules/stacks.toml [training_step]
    `pipeline_modules`/`pipeline_names`, or any modelled package) or issues torch P2P itself
    (config.own_p2p). Then the run stays undecided rather than read on those defaults."""
    keys = set(rulebook.load("megatron-core").data["config_attribute"]["keys"])
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        if any(isinstance(t, ast.Attribute) and t.attr in keys
               for target in targets for t in ast.walk(target)):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            return True
    steps = rulebook.load("stacks").data["training_step"]
    others = [m for m in [*modeled_packages(), *steps["pipeline_modules"]] if m.split(".")[0] != "megatron"]
    return uses_or_imports(tree, others, steps["pipeline_names"]) or own_p2p.of_tree(tree).may
