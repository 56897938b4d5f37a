"""Which DeepSpeed engine an entry runs, decided from what it and its local modules import: the
one place that reads it, for `deepspeed SCRIPT` (config.deepspeed_entry) and for the launchers
that name no framework (torchrun, python, a cluster's mpirun or srun: `deepspeed_pipeline`,
`deepspeed_engine` below).

deepspeed.initialize builds the PipelineEngine only for a PipelineModule (rules/deepspeed.toml
[pipeline_model]), whatever launcher starts the ranks. So the closure (stdlib `ast`, never run)
decides, in this order (`Engine.reading`):
- it names DeepSpeed's PipelineModule (the class: importing deepspeed.runtime.pipe for its
  process topology builds no engine): the pipeline engine (`pipeline`);
- it imports another stack the rules model (megatron, torch's pipelining...), names torch's P2P
  API itself (a hand-written stage loop, a vendored Megatron), imports DeepSpeed's pipe package
  for more than its topologies, uses one of rules/stacks.toml [no_pipeline]'s exceptions
  (transformers' Trainer, unless handed a DeepSpeed config on every path: rules/deepspeed.toml
  [trainer_engine]), runs code not read here (importlib by any name, a module loaded from a
  file or by a name not written, runpy, exec of anything but a literal or a class template,
  whose code is read in full as the file's own, another program), imports a module resolved to
  none this reader knows (a package of no rules, a module found only through a `sys.path` edit,
  a bare namespace folder of no module file), puts a folder first on sys.path that is not known
  here or shadows what was read, or stops the reading with an error: what runs is not
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
import re
import string
import sys
import textwrap
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from auditor import rulebook
from auditor.config.entry_script import (
    MAX_MODULES, binding_count, calls, dotted, foreign_imports, handler_types, iter_closure, local_roots, names,
    path_value, uses_modules, uses_or_imports)
from auditor.config.entry_script import _imported as imported_names, _resolve as resolve
from auditor.config.entry_stack import RULES, entry_read, import_line, modeled_packages, read_as_guess
from auditor.config.model import Flag, LaunchConfig
from auditor.config.shell_command import starts_programs
from auditor.config.uncalled import Readers, uncalled, without
from auditor.findings import Finding

Where = tuple[str, int]  # (file relative to the entry's folder, line)


class Engine(NamedTuple):
    """What the closure of an entry does with DeepSpeed, and what else it runs."""

    pipeline: Where | None  # first use of its PipelineModule
    engine: Where | None  # first deepspeed.initialize
    stack: tuple[str, str, int] | None  # (what, file, line): another stack the rules model, imported
    other: tuple[str, str, int] | None  # (what, file, line): else something the engine reading cannot vouch for
    modules: tuple[str, ...]  # the local modules read, relative to the entry's folder
    trainer: bool = False  # `engine` is transformers' Trainer handed a DeepSpeed config ([trainer_engine])
    parsed: bool = False  # that config is the launch line's `--deepspeed`, read by HfArgumentParser
    pipe_import: bool = False  # some module imports DeepSpeed's pipe package (its topologies too)
    failed: bool = False  # the reading stopped on an error (`other` names it)

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
def engine_of(path: str, mtime_ns: int, size: int, words: frozenset[str] = frozenset(),
              stated: int = 0) -> Engine | None:
    """The `Engine` of the entry at `path`; None where the closure was cut (a module not read may
    import anything). Cached on (path, mtime, size): each candidate command asks again. Whatever
    stops the reading (a file Python 3 cannot parse, an error of this reader) is `undecided`
    naming it: never the PipelineEngine reading nor the guessed one, whose judgement is not known
    to apply. `words`: the launch line's, which may name a function to call (config/uncalled.py);
    `stated`: `deepspeed_stated`'s count."""
    try:
        return _engine_of(Path(path), words, stated)
    except Exception as error:  # noqa: BLE001 - any failure: what runs is not known
        what = (f"could not be read by config/deepspeed_engine.py ({type(error).__name__}: {error}): "
                "which engine it builds is not known here")
        return Engine(None, None, None, (what, os.path.basename(path), int(getattr(error, "lineno", 0) or 0)),
                      (), failed=True)


def launch_words(launch: LaunchConfig) -> frozenset[str]:
    """The words the launch line passes the entry (its arguments, flags and their values): what
    a lookup by a name not written (`fire.Fire()`, `getattr(m, sys.argv[1])`) may take."""
    flags = list(launch.flags.values())
    given = [*launch.positionals, *(f.spelling for f in flags), *(v for f in flags for v in (f.value, *f.values))]
    return frozenset(str(w).lstrip("-") for w in given if isinstance(w, str))


def _deepspeed_flags(launch: LaunchConfig) -> tuple[str, Flag | None, list[Flag]]:
    """rules/deepspeed.toml [trainer_engine] `keyword`, the launch line's flag of that name, and
    the other flags argparse may read as it: a prefix of it (`--deeps $X`: argparse takes a
    unique prefix, allow_abbrev, HfArgumentParser's default). The one reader of which words give
    the Trainer its `--deepspeed` value."""
    keyword = rulebook.load("deepspeed").data["trainer_engine"]["keyword"]
    flag = launch.flags.get(keyword)
    prefixes = [f for f in launch.flags.values() if f is not flag and f.spelling.startswith("--")
                and f"--{keyword}".startswith(f.spelling.partition("=")[0])]
    return keyword, flag, prefixes


def deepspeed_stated(launch: LaunchConfig) -> int:
    """How many arguments the launch line passes the entry where it gives `--deepspeed VALUE`
    as a non-empty literal no unknown word may override (argparse: the last wins) and no flag
    argparse may read as it gives it again (`_deepspeed_flags`), else 0: what HfArgumentParser's
    TrainingArguments reads."""
    keyword, flag, prefixes = _deepspeed_flags(launch)
    if flag is None or flag.maybe or not isinstance(flag.value, str) or not flag.value.strip() \
            or any(keyword not in u.after for u in launch.unknown_words) or prefixes:
        return 0
    return len(launch.flags) + len(launch.positionals)


def deepspeed_unknown(launch: LaunchConfig) -> str:
    """The word, as written with its place, that leaves the launch line's `--deepspeed` value not
    known here ("" where it is known, or not written): a value not known statically (`--deepspeed
    $DS_CFG`, `--deepspeed=$DS`), a flag given only on a branch not decided, a flag argparse may
    read as it (`--deeps $X`), or a word not known after it that may give it again (`$EXTRA`
    holding `--deepspeed=`: argparse, the last wins). A known value, empty or not, is
    `deepspeed_stated`'s to read."""
    keyword, flag, prefixes = _deepspeed_flags(launch)
    if prefixes:
        return (f"{prefixes[-1].spelling} {prefixes[-1].value} ({launch.path}:{prefixes[-1].line}), "
                f"which argparse may read as --{keyword}")
    if flag is None or deepspeed_stated(launch):
        return ""
    if flag.maybe:
        return f"{flag.spelling} {flag.value} ({launch.path}:{flag.line}), given only on a branch not decided"
    if not isinstance(flag.value, str):
        return f"{flag.spelling} {flag.value} ({launch.path}:{flag.line})"
    later = next((u for u in launch.unknown_words if keyword not in u.after), None)
    return "" if later is None else f"{later.text} ({launch.path}:{later.line}), a word not known after {flag.spelling}"


def _engine_of(entry: Path, words: frozenset[str] = frozenset(), stated: int = 0) -> Engine | None:
    """`engine_of`'s reading, which may raise."""
    data = rulebook.load("deepspeed").data
    model = data["pipeline_model"]
    own = set(data["framework"]["packages"]) | set(model["modules"])
    others = [m for m in modeled_packages() if m.split(".")[0] not in own]
    stacks = rulebook.load(RULES).data["no_pipeline"]
    p2p = [api["name"] for api in rulebook.load("torch").data.get("p2p_api", [])]
    excepted = (stacks["except_modules"], stacks["except_names"])
    allowed = set(stacks["packages"]) | set(stacks["modules"]) | set(sys.stdlib_module_names) | {"__future__"} | own
    pipeline: Where | None = None
    engine: Where | None = None
    stack: tuple[str, str, int] | None = None
    other: tuple[str, str, int] | None = None
    modules: list[str] = []
    read = list(iter_closure(entry))
    if len(read) >= MAX_MODULES:
        return None
    paths = {module for module, _ in read}
    unread: dict[Path, int] = {}
    merged = []
    for module, whole in read:
        whole, unread[module] = _with_exec_code(_getattr_spelled(whole), module, entry, paths, stacks["runs_text"])
        merged.append((module, whole))
    read = merged
    pipe_import = any(uses_modules(whole, model["modules"], []) for _, whole in read)
    closure = [(module, _without(whole, stacks.get("inert_names", []) + model.get("inert_names", [])))
               for module, whole in read]
    imported = {name.split(".")[0] for module, tree in closure for name in _absolute_imports(tree)}
    dead = uncalled(read, words, Readers(frozenset(stacks["caller_namespace"]), frozenset(stacks["frame_access"])))
    trainer, parsed = _trainer_engine(closure, entry, data["trainer_engine"], stated) or (None, False)
    if trainer is not None:  # the Trainer's names vouched for: DeepSpeed's engine (rules/deepspeed.toml)
        vouches = data["trainer_engine"]["vouches"]
        excepted = ([m for m in excepted[0] if m not in vouches], [n for n in excepted[1] if n not in vouches])
        engine = trainer
    for module, tree in closure:
        shown = os.path.relpath(module, entry.parent)
        if module != entry:
            modules.append(shown)
        if pipeline is None and uses_or_imports(tree, [], model["names"]):  # the class, not its package
            pipeline = (shown, import_line(tree, model["modules"]) or _name_line(tree, model["names"])
                        or _from_line(tree, model["names"]))
        if engine is None:
            engine = next(((shown, node.lineno) for node, _, imported in calls(tree)
                           if imported in model["engine"]), None)
        found = next((m for m in others if uses_or_imports(tree, [m], [])), None)
        if stack is None and found is not None:
            stack = (f"imports {found}, a stack the rules model", shown, import_line(tree, [found]))
        if other is None and unread[module]:
            other = ("runs code (exec of a literal) that imports a local module not read here", shown, unread[module])
        if other is None:
            other = _beyond(tree, module, entry, shown, _Rules(p2p, excepted, allowed, stacks, model), imported,
                            dead.get(module, frozenset()))
    return Engine(pipeline, engine, stack, other, tuple(sorted(modules)), trainer is not None, parsed, pipe_import)


class _Rules(NamedTuple):
    """What `_beyond` reads each module against (rules/torch.toml, stacks.toml, deepspeed.toml)."""

    p2p: list[str]  # torch's P2P API
    excepted: tuple[list[str], list[str]]  # [no_pipeline]'s exceptions: modules, names
    allowed: set[str]  # packages the engine reading vouches for
    stacks: dict[str, Any]  # rules/stacks.toml [no_pipeline]
    model: dict[str, Any]  # rules/deepspeed.toml [pipeline_model]


def _beyond(tree: ast.Module, module: Path, entry: Path, shown: str, rules: _Rules,
            imported: set[str], dead: frozenset[str] = frozenset()) -> tuple[str, str, int] | None:
    """What of this module but another modelled stack the engine reading cannot vouch for, as
    (what, file, line), else None. `imported`: the top-level names the closure imports; `dead`:
    its functions nothing calls (config/uncalled.py), whose code never runs."""
    p2p, excepted, stacks, model = rules.p2p, rules.excepted, rules.stacks, rules.model
    if uses_or_imports(tree, [], p2p):
        return "names torch's P2P API itself (its own sends)", shown, _name_line(tree, p2p) or _from_line(tree, p2p)
    if uses_modules(tree, model["modules"], []):  # its inert names dropped (`_without`)
        return (f"imports DeepSpeed's pipeline package ({' or '.join(model['modules'])}) but never names "
                f"{' or '.join(model['names'])}: what it uses of it is not read here",
                shown, import_line(tree, model["modules"]) or _name_line(tree, model["modules"]))
    if uses_or_imports(tree, *excepted):
        return ("uses one of rules/stacks.toml [no_pipeline]'s exceptions (a Trainer, torch's pipelining)",
                shown, import_line(tree, excepted[0]) or _name_line(tree, excepted[1]) or _from_line(tree, excepted[1]))
    known = _known(module, entry, rules.allowed)
    roots = local_roots(entry)
    for name in _namespace_only(tree, [module.parent, *roots]):
        if not known(name, False):
            return (f"imports {name}, found here only as folders without __init__.py or a module file (a "
                    f"namespace package): a package {name.split('.')[0]} installed anywhere on sys.path is "
                    "imported instead, not read here"), shown, import_line(tree, [name])
    for name in foreign_imports(_fallbacks_dropped(tree), module, entry):
        if not known(name):
            return (f"imports {name}, resolved to no local file, the standard library or a package "
                    f"rules/{RULES}.toml [no_pipeline] lists"), shown, import_line(tree, [name])
    shadow = _path_prepended(tree, module, roots, imported)
    if shadow is not None:
        return shadow[0], shown, shadow[1]
    line = unseen_code(without(tree, dead), stacks["dynamic"] + stacks.get("loaders", []), stacks["runs_text"],
                       stacks.get("loader_methods", []))
    if line:
        return "runs code not read here (a module loaded by name or from a file, built text, another program)", shown, line
    return None


def _path_prepended(tree: ast.Module, module: Path, roots: list[Path],
                    tops: set[str]) -> tuple[str, int] | None:
    """(what, line) where the file puts a folder before the others on sys.path (`sys.path.insert(0,
    D)`, `sys.path = [D] + sys.path`, `sys.path[:0] = [D]`: DeepSpeedExamples' BingBertGlue
    run_glue_classifier_bert_large.py:20 puts a DeepSpeed checkout first) that is not known
    statically, or that holds a module or package named like one the closure imports (`imported`)
    which this reader resolved elsewhere: that module, not the one read here, is what runs. By the
    name imported too (`from sys import path`; `path.insert(0, D)`)."""
    imported = names(tree)

    def full(node: ast.expr) -> str:  # as imported: `from sys import path` makes `path` sys.path
        head, dot, rest = dotted(node).partition(".")
        return imported.get(head, head) + dot + rest
    for node in ast.walk(tree):
        added: ast.expr | None = None
        if isinstance(node, ast.Call) and full(node.func) == "sys.path.insert" and len(node.args) == 2:
            if not (isinstance(node.args[0], ast.Call) and dotted(node.args[0].func) == "len"):
                added = node.args[1]
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                whole = full(target) == "sys.path" and not isinstance(node, ast.AugAssign)
                if whole or isinstance(target, ast.Subscript) and full(target.value) == "sys.path":
                    added = node.value
        if added is None:
            continue
        folders = _folders(added, module, full)
        if folders is None:
            return ("puts a folder not known statically first on sys.path: an import may find a module there, "
                    "not the one read here"), int(getattr(node, "lineno", 0))
        for folder in folders:
            for top in sorted(tops):
                there = (folder / f"{top}.py").is_file() or (folder / top).is_dir()
                first = next((r for r in roots if (r / f"{top}.py").is_file() or (r / top).is_dir()), None)
                if there and first != folder:
                    return (f"puts {folder} first on sys.path, whose {top} is imported instead of "
                            f"{'the local one read here' if first else 'the installed package'}"), int(getattr(node, "lineno", 0))
    return None


def _folders(node: ast.expr, module: Path, full: Callable[[ast.expr], str]) -> list[Path] | None:
    """The folders a sys.path value adds, where known statically: `os.path` calls and `Path`
    steps from `__file__` (absolute string literals as they are), a list of them, `sys.path`
    itself adding none; None for anything else: a relative path (`os.pardir`, "../src": the
    working directory the run starts in is not known here, never the scanner's), or an absolute
    folder absent from this machine (what it holds there is not known)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        parts = [_folders(e, module, full) for e in node.elts]
        return None if any(p is None for p in parts) else [f for p in parts if p for f in p]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folders(node.left, module, full), _folders(node.right, module, full)
        return None if left is None or right is None else left + right
    if full(node) == "sys.path":
        return []
    path = path_value(node, module)
    return None if path is None or not path.is_absolute() or not path.exists() else [path]


def _trainer_engine(closure: list[tuple[Path, ast.Module]], entry: Path, rule: dict[str, Any],
                    stated: int = 0) -> tuple[Where, bool] | None:
    """The first `TrainingArguments(deepspeed=LITERAL)` of the closure (rules/deepspeed.toml
    [trainer_engine]) where every Trainer construction is handed `args=` (or the second
    positional) bound only to such calls, and the Trainer and arguments classes (by any name:
    `TrainingArguments as TA`) appear nowhere but as the callee of such calls; else None. Where
    the launch line states `--deepspeed VALUE` (`stated`: its argument count, `deepspeed_stated`),
    also arguments an HfArgumentParser of the class unpacks from sys.argv (`_parsed_bindings`),
    the class vouched for in that parser's tuple; the flag says True. A subclass,
    `functools.partial(Trainer, ...)`, an alias assigned, `args=X if c else None`, a config not
    known statically, a Trainer on its default arguments: undecided (None leaves accelerate's
    Megatron-LM plugin in)."""
    trainers, arguments = set(rule["trainers"]), set(rule["arguments"])
    short = {c.rsplit(".", 1)[1] for c in trainers | arguments}
    first: Where | None = None
    from_parser = False
    if stated and any(_argv_or_field_changed(tree, rule["keyword"]) for _, tree in closure):
        stated = 0  # sys.argv or the field rewritten: what the parser reads is not the launch line's
    for module, tree in closure:
        shown = os.path.relpath(module, entry.parent)
        local = {name for name, full in names(tree).items() if full in trainers | arguments} | short
        vouched: set[int] = set()  # the callee nodes of the calls read here
        for node, _, imported in calls(tree):
            if imported in arguments:
                if not _deepspeed_arguments(node, rule):
                    return None
                vouched.add(id(node.func))
                first = first or (shown, node.lineno)
            elif imported in trainers:
                given = [k.value for k in node.keywords if k.arg == "args"] + node.args[1:2]
                if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args) \
                        or len(given) != 1:
                    return None  # its default TrainingArguments (no DeepSpeed), or arguments not read here
                bound = _arguments_bound(tree, given[0], rule, arguments, stated)
                if bound is None:
                    return None
                vouched.add(id(node.func))
                vouched.update(bound[0])
                if bound[1]:
                    first, from_parser = first or (shown, bound[1]), True
        if any((isinstance(n, ast.Name) and n.id in local or isinstance(n, ast.Attribute) and n.attr in short)
               and id(n) not in vouched for n in ast.walk(tree)):
            return None  # a subclass, an alias, a partial, a parser's dataclass not read here
    return None if first is None else (first, from_parser)


def _deepspeed_arguments(node: ast.Call, rule: dict[str, Any]) -> bool:
    """Whether the arguments call states `deepspeed=` as a non-empty literal (a path or a dict)."""
    given = [k.value for k in node.keywords if k.arg == rule["keyword"]]
    return not any(k.arg is None for k in node.keywords) and len(given) == 1 and (
        isinstance(given[0], ast.Constant) and isinstance(given[0].value, str) and bool(given[0].value)
        or isinstance(given[0], ast.Dict) and bool(given[0].keys))


def _arguments_bound(tree: ast.Module, value: ast.expr, rule: dict[str, Any], arguments: set[str],
                     stated: int = 0) -> tuple[set[int], int] | None:
    """Whether a Trainer's `args` is an arguments call with a DeepSpeed config, or a name every
    binding of which in the file is a plain assignment of one (no parameter, loop,
    `X if c else None`) or, where the launch line states `--deepspeed` (`stated`), an
    unpacking from an HfArgumentParser of the class (`_parsed_bindings`): on every path the
    Trainer gets that config. Returns the class nodes vouched for in such parsers and the line
    of the parse (0: none), else None."""
    imported = names(tree)

    def called(node: ast.expr) -> bool:
        if not isinstance(node, ast.Call):
            return False
        head, dot, rest = dotted(node.func).partition(".")
        return imported.get(head, head) + dot + rest in arguments and _deepspeed_arguments(node, rule)
    if not isinstance(value, ast.Name):
        return (set(), 0) if called(value) else None
    bindings = _bindings(tree, value.id)
    if not bindings:
        return None
    vouched: set[int] = set()
    line = 0
    for node in bindings:
        if isinstance(node.targets[0], ast.Name):
            if not called(node.value):
                return None
            continue
        parsed = _parsed_bindings(tree, node, value.id, rule, arguments, stated) if stated else None
        if parsed is None:
            return None
        vouched.add(parsed)
        if isinstance(node.value, ast.Call) and dotted(node.value.func).endswith(f".{rule['parse']}"):
            line = line or node.lineno  # the parse that runs, not a dead branch's
    return vouched, line


def _bindings(tree: ast.Module, name: str) -> list[ast.Assign]:
    """The assignments binding `name` (`name = V`, or one plain name of `a, name = V`), where
    they are all its bindings in the file (entry_script.binding_count: no parameter, loop, other
    unpacking, import, def, global); else []."""
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1 and (
        isinstance(n.targets[0], ast.Name) and n.targets[0].id == name
        or isinstance(n.targets[0], (ast.Tuple, ast.List))
        and all(isinstance(e, ast.Name) for e in n.targets[0].elts)
        and any(isinstance(e, ast.Name) and e.id == name for e in n.targets[0].elts))]
    return found if len(found) == binding_count(tree, name) else []


def _parsed_bindings(tree: ast.Module, node: ast.Assign, name: str, rule: dict[str, Any], arguments: set[str],
                     stated: int) -> int | None:
    """The id of the arguments class node where `a, ..., name = P.parse_args_into_dataclasses()`
    (no argument: sys.argv[1:], where the launch line's `--deepspeed` is) unpacks `name` from
    the place of an `arguments` class in `P = HfArgumentParser((A, ..., TrainingArguments))`,
    P bound only so; a `dead_forms` parse (a JSON file's) only inside `if len(sys.argv) == 2 ...:`
    while the launch passes two or more arguments (`stated`), a branch that never runs. Else None."""
    imported = names(tree)
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)):
        return None
    if call.func.attr == rule["parse"]:
        if call.args or call.keywords:
            return None  # arguments other than sys.argv's, or a parse of its own options
    elif not (call.func.attr in rule["dead_forms"] and stated >= 2 and id(node) in _argv_two_branches(tree)):
        return None
    parsers = _bindings(tree, call.func.value.id)
    if len(parsers) != 1 or not isinstance(parsers[0].targets[0], ast.Name):
        return None
    made = parsers[0].value
    if not (isinstance(made, ast.Call) and len(made.args) == 1 and not made.keywords):
        return None
    head, dot, rest = dotted(made.func).partition(".")
    if imported.get(head, head) + dot + rest not in rule["parsers"]:
        return None
    classes = made.args[0].elts if isinstance(made.args[0], (ast.Tuple, ast.List)) else [made.args[0]]
    targets = node.targets[0].elts if isinstance(node.targets[0], (ast.Tuple, ast.List)) else []
    place = next(i for i, t in enumerate(targets) if isinstance(t, ast.Name) and t.id == name)
    if len(targets) != len(classes) or any(isinstance(c, ast.Starred) for c in classes):
        return None
    head, dot, rest = dotted(classes[place]).partition(".")
    return id(classes[place]) if imported.get(head, head) + dot + rest in arguments else None


def _argv_two_branches(tree: ast.Module) -> set[int]:
    """The ids of the nodes in the body of an `if` whose test is, or is `and`-joined with,
    `len(sys.argv) == 2`: the one-JSON-argument form of transformers' examples."""
    imported = names(tree)

    def argv_two(test: ast.expr) -> bool:
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(argv_two(v) for v in test.values)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == 2):
            return False
        call = test.left
        if not (isinstance(call, ast.Call) and dotted(call.func) == "len" and len(call.args) == 1):
            return False
        head, dot, rest = dotted(call.args[0]).partition(".")
        return imported.get(head, head) + dot + rest == "sys.argv"
    return {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and argv_two(node.test)
            for stmt in node.body for n in ast.walk(stmt)}


def _argv_or_field_changed(tree: ast.Module, keyword: str) -> bool:
    """Whether the file may change what a parser reads from the launch line: sys.argv used other
    than read (`len(sys.argv)`, `sys.argv[1]`, `sys.argv[1:]`, `for a in sys.argv`, `x in
    sys.argv`): assigned, deleted from, a method called, or handed on (`strip(sys.argv)`, whose
    `del a[i:i + 2]` is not read here); the `keyword` field assigned or deleted
    (`training_args.deepspeed = None`), or a `setattr` of a name not a literal or that one."""
    imported = names(tree)
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}

    def argv(node: ast.expr) -> bool:
        head, dot, rest = dotted(node).partition(".")
        return imported.get(head, head) + dot + rest == "sys.argv"

    def read(node: ast.expr) -> bool:
        use = parents.get(id(node))
        return (isinstance(use, ast.Subscript) and use.value is node and isinstance(use.ctx, ast.Load)
                or isinstance(use, ast.Call) and dotted(use.func) == "len" and use.args == [node]
                or isinstance(use, (ast.For, ast.comprehension)) and use.iter is node
                or isinstance(use, ast.Compare) and node in use.comparators
                and all(isinstance(o, (ast.In, ast.NotIn)) for o in use.ops))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Name)) and argv(node) and not read(node):
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.attr == keyword:
            return True
        if isinstance(node, ast.Call) and dotted(node.func) == "setattr" and (
                len(node.args) < 2 or not isinstance(node.args[1], ast.Constant) or node.args[1].value == keyword):
            return True
    return False


def _absolute_imports(tree: ast.Module) -> list[str]:
    """The dotted names the file imports absolutely (`import a.b`, `from a.b import c`: a.b)."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.append(node.module)
    return out


def _namespace_only(tree: ast.Module, roots: list[Path]) -> list[str]:
    """The absolute imports of the file whose package every root holding it holds as a bare
    folder (no __init__.py, no module file) and of which no module file is read (`from fairscale.nn
    import Pipe` beside a `fairscale/` folder of no Python): a namespace package, which Python
    imports only where no regular package of that name is on sys.path (importlib's PathFinder: a
    portion is the last resort), so an installed one is what runs. One whose modules the closure
    reads (DeepSpeedExamples' bing_bert `turing/`, no __init__.py) is the authors' own code."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            wanted = [[a.name] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            wanted = [[node.module, *(f"{node.module}.{a.name}" for a in node.names)]]
        else:
            continue
        for dotted_names in wanted:
            top = dotted_names[0].split(".")[0]
            holding = [r for r in roots if (r / top).is_dir() or (r / f"{top}.py").is_file()]
            if not holding or any((r / f"{top}.py").is_file() or (r / top / "__init__.py").is_file() for r in holding):
                continue  # a regular package or module (of any root) is what Python imports
            if not any((r / f"{n.replace('.', '/')}.py").is_file() or (r / n.replace(".", "/") / "__init__.py").is_file()
                       for r in holding for n in dotted_names):  # a dotted_namespace's portions are merged across roots
                out.append(dotted_names[0])
    return out


def _known(module: Path, entry: Path, allowed: set[str]) -> Callable[..., bool]:
    """Whether an absolute import `foreign_imports` leaves is still known: `allowed` (or a module
    of it), or (`folders`) a folder of a local package (its modules are read as the closure
    imports them; a top-level folder without __init__.py is `_namespace_only`'s to judge)."""
    roots = [module.parent, *local_roots(entry)]

    def known(name: str, folders: bool = True) -> bool:
        return (any(name == a or name.startswith(f"{a}.") for a in allowed)
                or folders and any((root / name.replace(".", "/")).is_dir() for root in roots))
    return known


def _fallbacks_dropped(tree: ast.Module) -> ast.Module:
    """`tree` less the `except ImportError:` handlers of a `try:` whose imports are all Python 3's
    standard library (the Python 2 fallback `from urlparse import urlparse` after `from
    urllib.parse import urlparse`, DeepSpeedExamples' bing_bert turing/file_utils.py:24-27): such
    a handler never runs. A third-party package tried first (apex) may be missing where the run
    starts: its fallback's imports count too."""
    caught = {"ImportError", "ModuleNotFoundError"}

    class Drop(ast.NodeTransformer):
        def visit_Try(self, node: ast.Try) -> ast.AST:
            self.generic_visit(node)
            imported = [a.name for n in node.body for m in ast.walk(n) if isinstance(m, ast.Import) for a in m.names]
            imported += [m.module or "" for n in node.body for m in ast.walk(n)
                         if isinstance(m, ast.ImportFrom) and not m.level]
            if imported and all(name.split(".")[0] in sys.stdlib_module_names for name in imported):
                node.handlers = [h for h in node.handlers if not handler_types(h) & caught]
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


def unseen_code(tree: ast.Module, dynamic: list[str], runs_text: list[str], methods: Sequence[str] = ()) -> int:
    """The first line that loads or runs code this reader does not see: a `dynamic` call (exec,
    importlib.import_module, importlib.util.spec_from_file_location, pkgutil.resolve_name, runpy)
    by the name written or imported (`from importlib import import_module`), a call of one of
    `methods` on any object (`spec.loader.exec_module(mod)`), `getattr` of a module by a name not
    written (`getattr(importlib, name)`), but an exec/eval (`runs_text`) whose code
    `_exec_code` reads (put into the module by `_with_exec_code`, read with it in full), or a call
    starting a program; else 0."""
    modules = _module_names(tree)
    for node, written, imported in calls(tree):
        if (written in dynamic or imported in dynamic) and not (
                (written in runs_text or imported in runs_text) and _exec_code(tree, node) is not None):
            return node.lineno
        if isinstance(node.func, ast.Attribute) and node.func.attr in methods:
            return node.lineno
        if written == "getattr" and node.args and (
                dotted(node.args[0]).split(".")[0] in modules or isinstance(node.args[0], ast.Call)):
            return node.lineno  # spelled out by `_getattr_spelled` where its name is a literal
    started = starts_programs(tree)
    return getattr(started[0].node, "lineno", 1) if started else 0


def _module_names(tree: ast.Module) -> set[str]:
    """The names the file binds by an import (`import importlib`, `from deepspeed import pipe`):
    a module, or a class or function of one, whose attributes `getattr` may look up."""
    return {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names}


def _getattr_spelled(tree: ast.Module) -> ast.Module:
    """`tree` with `getattr(M, "name")` of an imported name M written `M.name` (the same lookup),
    so that `getattr(importlib, "import_module")(...)` and `getattr(deepspeed.pipe,
    "PipelineModule")` are read as what they call or name; `getattr` by a name not written is
    `unseen_code`'s."""
    modules = _module_names(tree)

    class Spell(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if dotted(node.func) == "getattr" and len(node.args) == 2 and not node.keywords \
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
                    and node.args[1].value.isidentifier() and dotted(node.args[0]).split(".")[0] in modules:
                return ast.copy_location(ast.Attribute(node.args[0], node.args[1].value, ast.Load()), node)
            return node
    return Spell().visit(copy.deepcopy(tree))


def _with_exec_code(tree: ast.Module, module: Path, entry: Path, paths: set[Path], runs_text: list[str],
                    depth: int = 3) -> tuple[ast.Module, int]:
    """`tree` with the code of each exec/eval `_exec_code` reads appended to it, so that every
    reading of a file (PipelineModule, torch's P2P, a Trainer, imports, loaders) reads it too; and
    the line of the first such exec whose code imports a local module the closure (`paths`) does
    not read, else 0. Nested deeper than `depth`: RecursionError (`engine_of`: undecided)."""
    codes = [(node, code) for node, written, imported in calls(tree)
             if (written in runs_text or imported in runs_text)
             for code in [_exec_code(tree, node)] if code is not None]
    if not codes:
        return tree, 0
    if depth <= 0:
        raise RecursionError("exec of code that exec's code, nested too deep to read")
    body = list(tree.body)
    unread = 0
    roots = [module.parent, *local_roots(entry)]
    for node, code in codes:
        code, inner = _with_exec_code(code, module, entry, paths, runs_text, depth - 1)
        for where, name in imported_names(code, module):
            if any(p not in paths for p in resolve(name, [where] if where else roots)):
                inner = inner or node.lineno
        unread = unread or (node.lineno if inner else 0)
        body += code.body
    return ast.Module(body=body, type_ignores=[]), unread


def _exec_code(tree: ast.Module, node: ast.Call) -> ast.Module | None:
    """The code an exec/eval call runs, where this reader reads it in full: a string literal, or a
    name every binding of which (parameters too) is one assignment of one; or a class template of
    the file's own `.format`ted (`_template_code`); else None (f-strings, `%`, `+`, a file's text,
    a value not read here)."""
    if not node.args or isinstance(node.args[0], ast.Starred):
        return None
    arg = _bound(tree, node.args[0])
    text = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
    if text is None and isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "format":
        template = _literal(tree, arg.func.value)
        return None if template is None else _template_code(tree, template, arg, 3)
    if text is None:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])  # the exec raises, running nothing


def _bound(tree: ast.Module, node: ast.expr) -> ast.expr:
    """The one value a name is bound to where its only binding in the file is one plain
    assignment (no parameter, loop, `global` elsewhere), else `node` itself."""
    if not isinstance(node, ast.Name):
        return node
    values = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets)]
    stores = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == node.id
                 and isinstance(n.ctx, (ast.Store, ast.Del)))
    stores += sum(1 for n in ast.walk(tree) if isinstance(n, ast.arg) and n.arg == node.id)
    return values[0] if len(values) == 1 == stores else node


def _literal(tree: ast.Module, node: ast.expr) -> str | None:
    """The string literal `node` is, or that a name bound once (`_bound`) holds, else None."""
    node = _bound(tree, node)
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _built_here(tree: ast.Module, node: ast.expr, depth: int) -> bool:
    """Whether `node` is text whose code this reader reads (a template slot's value): a literal, a
    template of the file's own `.format`ted (`_template_code`), or a name bound once to one."""
    node = _bound(tree, node)
    if depth < 0:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, int, float))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        template = _literal(tree, node.func.value)
        return template is not None and _template_code(tree, template, node, depth - 1) is not None
    return False


def _template_code(tree: ast.Module, template: str, call: ast.Call, depth: int) -> ast.Module | None:
    """The code of `template.format(...)` (`call`) with each slot taken as a name, where each slot
    whose value is not text read here (`_built_here`) stands where a name or a literal goes: not a
    whole statement (but one joining texts read here, `"\\n".join(T.format(...) for ...)`), a
    module imported, nor an assignment's whole value (`"model = {}".format(sys.argv[1])`) unless written `!r` (a value's
    repr) or `:d` (an integer): the namedtuple-style class template DeepSpeedExamples' bing_bert
    turing/utils.py:139-153 exec's. Else None. A value holding a newline or a quote could still add
    code in a name's place: the slots are taken as the names and text they stand for."""
    if depth < 0 or any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    named = {k.arg: k.value for k in call.keywords if k.arg}
    text: list[str] = []
    slots: dict[str, ast.expr] = {}
    safe: set[str] = set()
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return None
    roots = [re.split(r"[.\[]", f[1], maxsplit=1)[0] for f in fields if f[1] is not None]
    if "" in roots and any(r.isdecimal() for r in roots):
        return None  # str.format refuses automatic and manual numbering together
    automatic = 0
    for literal, field, spec, conversion in fields:
        text.append(literal)
        if field is None:
            continue
        root = re.split(r"[.\[]", field, maxsplit=1)[0]
        index = int(root) if root.isdecimal() else None if root else automatic
        automatic += not root
        value = named.get(root) if index is None else call.args[index] if index < len(call.args) else None
        if value is None:
            return None
        slot = f"_p2paudit_slot{len(slots)}"
        slots[slot] = value
        if conversion == "r" or spec == "d":
            safe.add(slot)
        text.append(slot)
    try:
        code = ast.parse(textwrap.dedent("".join(text)))  # a class body's lines, indented
    except (SyntaxError, ValueError):
        return None
    statements = {s.value.id for s in ast.walk(code) if isinstance(s, ast.Expr) and isinstance(s.value, ast.Name)}
    assigned = {s.value.id for s in ast.walk(code) if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                and isinstance(s.value, ast.Name)} - safe
    assigned |= {part for n in ast.walk(code) if isinstance(n, (ast.Import, ast.ImportFrom))
                 for a in n.names for part in [*(a.name.split(".")), *((n.module or "").split(".") if isinstance(n, ast.ImportFrom) else [])]}
    for slot, value in slots.items():
        if _built_here(tree, value, depth - 1):
            continue
        if slot in statements and not _joined_read(tree, value, depth - 1) or slot in assigned:
            return None
    return code


def _joined_read(tree: ast.Module, node: ast.expr, depth: int) -> bool:
    """`SEP.join(ELT for ...)` (or a list of them) whose SEP and ELT are text read here."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
            and len(node.args) == 1 and _built_here(tree, node.func.value, depth)):
        return False
    parts = node.args[0]
    return isinstance(parts, (ast.GeneratorExp, ast.ListComp)) and _built_here(tree, parts.elt, depth)


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
            f"{written} and the {modules} local module(s) it imports never name "
            f"{' or '.join(model['names'])}, so deepspeed.initialize gets no {model['names'][0]} "
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


def trainer_said(engine: Engine, launch: LaunchConfig) -> str:
    """What a Trainer vouched for does (rules/deepspeed.toml [trainer_engine] `what`), naming the
    launch line's `--deepspeed VALUE` where HfArgumentParser reads the config from it."""
    rule = rulebook.load("deepspeed").data["trainer_engine"]
    if not engine.parsed:
        return str(rule["what"])
    flag = launch.flags[rule["keyword"]]
    return (f"parses TrainingArguments with HfArgumentParser from the launch line, whose {flag.spelling} "
            f"{flag.value} ({launch.path}:{flag.line}) {rule['what']}")


def launched(engine: Engine, launch: LaunchConfig) -> Engine:
    """`engine` as `launch` runs it: a Trainer vouched for (rules/deepspeed.toml [trainer_engine])
    is undecided where the launch's environment sets a variable of `environment`'s prefixes
    (ACCELERATE_USE_MEGATRON_LM, MEGATRON_LM_PP_DEGREE): accelerate's own settings, not read here."""
    rule = rulebook.load("deepspeed").data["trainer_engine"]
    given = sorted(k for k in launch.env if k.startswith(tuple(rule["environment"])))
    if not engine.trainer or not given or engine.reading() != "zero" or engine.engine is None:
        return engine
    where, line = engine.engine
    return engine._replace(other=(
        f"hands transformers' Trainer a DeepSpeed config while the launch sets {', '.join(given)}: what "
        "accelerate makes of them beside it is not read here", where, line))


def _trainer_given_config(launch: LaunchConfig, entry: Any) -> bool:
    """A `launch.unknown-stack` finding (INCONCLUSIVE) where the entry's Trainer reads its
    DeepSpeed config from a launch line whose `--deepspeed` value is not known
    (`deepspeed_unknown`) and the closure, read as if that value were stated, is DeepSpeed's
    data-parallel engine (`Engine.reading` `zero`): a non-empty value runs it, and with it no
    pipeline (deepspeed.initialize builds a PipelineEngine only for a PipelineModule, whatever
    the config holds: rules/deepspeed.toml [pipeline_model]); an empty one runs no DeepSpeed and
    leaves accelerate's own choice, its Megatron-LM plugin included. Neither megatron-core's
    reading nor NOT A PIPELINE RUN is known to be the run's: the value decides."""
    word = deepspeed_unknown(launch)
    if not word:
        return False
    given = len(launch.flags) + len(launch.positionals)
    try:
        stat = os.stat(entry.path)
        found = engine_of(entry.path, stat.st_mtime_ns, stat.st_size, launch_words(launch), given)
    except OSError:
        return False
    if found is None or not (found.trainer and found.parsed) or found.reading() != "zero":
        return False
    name = os.path.basename(entry.written)
    if launched(found, launch).reading() != "zero":  # accelerate's own variables set: undecided either way
        undecided(launch, name, launched(found, launch))
        return True
    assert found.engine is not None
    where, line = found.engine
    keyword = rulebook.load("deepspeed").data["trainer_engine"]["keyword"]
    model = rulebook.load("deepspeed").data["pipeline_model"]
    _unknown_stack(launch, f"{where}:{line} parses TrainingArguments with HfArgumentParser from the "
                           f"launch line, whose --{keyword} value is not known here ({word}): a non-empty one "
                           "hands transformers' Trainer a DeepSpeed config, so DeepSpeed's data-parallel engine "
                           f"runs and no pipeline ({name} and its local modules never name "
                           f"{' or '.join(model['names'])}; {model['source']}: `{model['code']}`); an empty "
                           "one runs no DeepSpeed, leaving the Trainer to accelerate's own choice (its Megatron-LM "
                           "plugin where the environment asks for it)",
                   f"the --{keyword} value the Trainer gets ({word})",
                   f"the value the run gives it, set in {os.path.basename(launch.path)} or as --command "
                   f"'{launch.launcher} ... --{keyword} CONFIG.json'", [])
    return True


def _guessed(launch: LaunchConfig) -> tuple[Any, Engine] | None:
    """The entry and its Engine, for a torch launcher's run read as Megatron-LM's front end only
    as a guess and not yet said to be anything else; None otherwise."""
    if any(d.kind in ("launch.not-pipeline", "launch.not-covered", "launch.unknown-stack")
           for d in launch.diagnostics) or not read_as_guess(launch):
        return None
    read = entry_read(launch, functools.partial(engine_of, words=launch_words(launch),
                                                stated=deepspeed_stated(launch)))
    return None if read is None else (read[0], launched(read[1], launch))


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
    naming what it cannot vouch for where `undecided` (also where it imports DeepSpeed's pipe
    package without the engine: its topology beside sends of its own, no PipelineEngine to
    judge), but another stack the rules model, whose reading applies."""
    read = _guessed(launch)
    if read is None:
        return
    entry, found = read
    if found.engine is None and _trainer_given_config(launch, entry):
        return
    if found.pipeline is not None or found.stack or found.engine is None and not (found.pipe_import or found.failed):
        return  # another stack: its reading
    if found.reading() == "undecided":
        undecided(launch, os.path.basename(entry.written), found)
        return
    if found.engine is None:
        return  # a topology imported, no engine built, nothing else: left to the other readings
    where, line = found.engine
    builds = (f"{where}:{line} {trainer_said(found, launch)}" if found.trainer
              else f"deepspeed.initialize at {where}:{line} builds the engine")
    launch.diagnostics.append(Finding(
        "launch.not-pipeline", "info",
        f"{zero_engine(launch.launcher, entry.written, len(found.modules))} ({builds}, whichever launcher "
        "starts the ranks; the entry imports no megatron)", where=f"{launch.path}:{launch.command_line}",
        detail={"command": launch.launcher, "modules": list(found.modules)}))
