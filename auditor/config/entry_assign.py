"""The parallel sizes a Python entry with its own argparse sets on the model config itself.

Megatron-Bridge's generate and inference programs (examples/conversion/hf_to_megatron_generate_*.py)
take `--tp/--pp/--ep` of their own and write them onto the model provider, a megatron-core
ModelParallelConfig: `pp = args.pp` ... `model_provider.pipeline_model_parallel_size = pp`. The
run's sizes are that file's, read here with the stdlib `ast` (never run): an attribute named in
rules/megatron-core.toml `[config_attribute]` set to a literal or to `args.DEST` (directly, or
through a name its function binds once), the flag the launch line gives else the argparse default
(config/entry_script.py `arg_value`). A value counts only where the file surely sets it (on every
branch of the function a module-level call runs), and every place the file writes it (an
assignment, a dict's `"key": value`, a call's `key=value`) agrees; anything else leaves the
setting as the front end read it. Not for Megatron-LM's front end, whose parser owns the flags.

Such a program that passes megatron-core's schedule `forward_only=True` in every call of it (every
call or mapping naming the parameter or the schedules' required `forward_step_func`,
rules/megatron-core.toml `[forward_only]`; none passes another value or leaves the default, no
schedule escapes the calls read, and no training loop is imported or called), at a pipeline
size of 1 read so, megatron-core runs
forward_backward_no_pipelining and sends nothing between stages: a `launch.not-pipeline` note
(NOT A PIPELINE RUN). At PP > 1 the forward-only schedule sends activations between stages:
scanned, with `schedule_forward_only` True among the entry's values, and `schedule_microbatches`
where every such call passes a literal `num_microbatches` (rules/megatron-core.toml
mcore.forward-only-one-way and mcore.interleaved-microbatches read them); a name bound once, at
module level, to a literal is read as that literal (`forward_only=FORWARD_ONLY`) unless a star
import in its file may bind it again; undecided where the
closure loads code not read (`importlib.import_module(f"task_{args.task}")`, whose module may
train), naming the flags that choose it. `may_write` says where
the entry may write a setting other than None, or load a checkpoint before its provider sets the
parallel state (config/generate_entry.py asks it of the virtual pipeline a checkpoint could carry
onto the entry's schedule).
"""

from __future__ import annotations

import ast
import functools
from typing import Any

from pathlib import Path

from auditor import rulebook
from auditor.config.entry_constructs import bound_from_framework, constructs
from auditor.config.entry_library import library_imports, library_sizes, library_trees
from auditor.config.entry_schedule import names_schedule
from auditor.config.entry_script import (MAX_MODULES, arg_value, argparse_options, binding_count, calls, dotted,
                                         iter_closure, stores_of)
from auditor.config.entry_stack import modeled_roots
from auditor.config.entry_stores import nested_attr_stores, opaque_keywords, unnamed_stores
from auditor.config.expr import UNKNOWN
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import entry_tree
from auditor.findings import Finding
from auditor.rulebook.frameworks import launched_by

SCHEDULES = "megatron.core.pipeline_parallel.schedules."
FNS = (ast.FunctionDef, ast.AsyncFunctionDef)

def read_entry_assignments(launch: LaunchConfig) -> None:
    """Put the sizes the entry script surely sets on its model config into `launch.entry_values`."""
    if launch.builds_parser or launch.script_module:
        return  # Megatron-LM's parser owns the flags, or a module this reader does not read
    if launch.style == "megatron-lm" and ("megatron-lm" in launch.checkouts or _megatron_lm_by_name(launch)):
        return  # an entry of a Megatron-LM checkout, or one of its pretrain_*.py: its front end reads the flags
    # Megatron-LM's front end only by guess (a generator of its own argparse in a folder no
    # script rule names: Megatron-Bridge's examples/models/nemotron/nemotron_3_omni/
    # hf_to_megatron_generate_nemotron_omni.py): what the entry surely sets is read, and a size it
    # leaves unknown stays the front end's reading (other readers own such entries' settings:
    # config/bridge_mimo.py for examples/megatron_mimo/).
    guessed = launch.style == "megatron-lm"
    if guessed and any(d.kind == "launch.unresolved-args" for d in launch.diagnostics):
        return  # words not seen (`"${ARGS[@]}"`: examples/inference/run_openai_server.sh) may give its flags
    if not any(f.name == "megatron-core" for f in launch.stack.frameworks):
        return
    read = entry_tree(launch)
    if read is None:
        return
    entry, tree = read
    options = argparse_options(tree)
    if not options:
        return  # no argparse of its own: its flags are another parser's
    keys = rulebook.load("megatron-core").data["config_attribute"]["keys"]
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    elsewhere = _written_elsewhere(Path(entry.path), keys, options)
    loaded = library_sizes(launch, Path(entry.path), tree, options, keys)
    for key in keys:
        found = _setting(tree, key, options, launch, called)
        if key in loaded:
            found = loaded[key] if found is None else (UNKNOWN, f"{loaded[key][1]}, and the script writes it too",
                                                       found[2])
        if key in elsewhere and found is not None:
            found = (UNKNOWN, f"{elsewhere[key]} writes it too, after the script may",
                     found[2])
        if found is not None and key not in launch.entry_values:
            value, why, line = found
            launch.entry_values[key] = (value, f"{entry.path}:{line}: {why}", f"{entry.path}:{line}")
    _forward_only(launch, Path(entry.path), options)


def loads_checkpoint(launch: LaunchConfig, loaders: list[str], params: list[str],
                     keywords: list[str]) -> tuple[str, str] | None:
    """(where, in words (file:line), the loader) where the entry or a local module it imports may
    load a checkpoint other than None, whatever its option is called: a call of one of `loaders`
    (by name, attribute or an import's other name) whose path (its first argument, or a keyword in `params`) is not surely
    None, a call passing one by a keyword in `keywords` (a library's
    `load_bridge_model(megatron_model_path=...)`: the first loader's), or a loader used otherwise
    than called or named by a string (`getattr(bridge, "load_megatron_model")`). A path read as None (`args.DEST` whose option the launch line leaves at a None
    default, a literal None) loads nothing; a value not read statically may be a checkpoint. None
    where no such call may load one, or nothing is read."""
    read = entry_tree(launch)
    if read is None:
        return None
    entry, tree = read
    script = Path(entry.path)
    options = argparse_options(tree)
    stop = modeled_roots()
    try:
        trees = list(iter_closure(script, stop))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return f"a local module of {script.name} that cannot be read", loaders[0]
    for path, module in trees:
        parents = _parents(module)
        renamed = {a.asname: a.name for n in ast.walk(module) if isinstance(n, ast.ImportFrom)
                   for a in n.names if a.name in loaders and a.asname}  # `import load_megatron_model as load`
        for scope in _scopes(module):
            for node in _own_nodes(scope):
                named = renamed.get(node.id, node.id) if isinstance(node, ast.Name) else \
                    node.attr if isinstance(node, ast.Attribute) else None
                if isinstance(node, ast.Constant) and node.value in loaders:  # getattr(bridge, "load_megatron_model")
                    return f"{path.name}:{node.lineno}: {node.value!r} named by a string", str(node.value)
                call = node if isinstance(node, ast.Call) else None
                up = parents.get(id(node))
                if named in loaders and not (isinstance(up, ast.Call) and up.func is node):
                    return f"{path.name}:{getattr(node, 'lineno', 0)}: {named} used otherwise than called", str(named)
                if call is None:
                    continue
                callee = renamed.get(call.func.id, call.func.id) if isinstance(call.func, ast.Name) else \
                    call.func.attr if isinstance(call.func, ast.Attribute) else None
                given = {k.arg: k.value for k in call.keywords if k.arg is not None}
                paths: list[tuple[ast.expr | None, str]] = [(given[k], loaders[0]) for k in keywords if k in given]
                if callee in loaders:
                    first = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
                    paths.append((first if first is not None else next((given[k] for k in params if k in given),
                                                                       None), str(callee)))
                for expr, by in paths:
                    got = None if expr is None else _resolve(expr, scope, options if path == script else {}, launch)
                    if got is None or got[0] is not None:
                        shown = "its path not read" if expr is None else ast.unparse(expr)
                        value = "a value not read statically" if got is None else f"{got[0]!r} ({got[1]})"
                        return f"{path.name}:{call.lineno}: {ast.unparse(call.func)}({shown}), {value}", by
    return None


def may_write(launch: LaunchConfig, attrs: list[str], loader: str, init: str) -> str | None:
    """Where the checkpoint may reach the entry provider's settings, in words (file:line): the
    entry may write one of `attrs` (on its model provider, or anywhere) a value that is not None,
    or it may call `loader` before its provider sets the parallel state (`_loads_first`); None
    where nothing it runs can: the script writes each only as None (a literal, or `args.DEST`
    whose option the launch line leaves at a None default), writes nothing by a name not written,
    and neither a local module it imports nor a module of its checkout's `src/` that it or one of
    those imports from writes one, other than as a literal None."""
    read = entry_tree(launch)
    if read is None:
        return "the entry script is not read"
    entry, tree = read
    script = Path(entry.path)
    options = argparse_options(tree)
    scopes = _scopes(tree)
    for attr in attrs:
        for scope in scopes:
            for line, shown, expr in _writes(scope, attr, tree):
                got = None if expr is None else _resolve(expr, scope, options, launch)
                if got is None or got[0] is not None:
                    value = "" if expr is None else f" = {ast.unparse(expr)}"
                    return f"{script.name}:{line}: {shown}{value}, a value that may not be None"
    unnamed = sorted(u for scope in scopes for u in _unnamed(scope, tree))
    if unnamed:
        return f"{script.name}:{unnamed[0][0]}: {unnamed[0][1]}"
    trees: list[tuple[Path, ast.Module]] = []
    elsewhere = _written_elsewhere(script, attrs, {k: dict(v) for k, v in options.items()}, trees)
    if elsewhere:
        return f"{min(elsewhere.values())} writes {', '.join(sorted(elsewhere))}"
    modules = dict.fromkeys(m for _, t in trees for m in library_imports(t))
    for _, lib, lib_tree in library_trees(script, list(modules)):
        if lib_tree is None:
            return f"{lib.name}, which the entry imports from, cannot be read"
        trees.append((lib, lib_tree))
        lib_scopes = _scopes(lib_tree)
        for attr in attrs:
            for scope in lib_scopes:
                for line, shown, expr in _writes(scope, attr, lib_tree):
                    if not (isinstance(expr, ast.Constant) and expr.value is None):
                        return f"{lib.name}:{line}: {shown}"
        lib_unnamed = sorted(u for scope in lib_scopes for u in _unnamed(scope, lib_tree))
        if lib_unnamed:
            return f"{lib.name}:{lib_unnamed[0][0]}: {lib_unnamed[0][1]}"
    return _loads_first(tuple(trees), loader, init)


@functools.lru_cache(maxsize=64)
def _loads_first(trees: tuple[tuple[Path, ast.Module], ...], loader: str, init: str) -> str | None:
    """Where one of `trees` may call `loader` before the entry's provider sets the parallel state
    (rules/megatron-bridge.toml `provider_init`): a reference to it (by an import's other name
    too) that is not a call, its name in a string (`getattr`), or a call
    no statement `NAME.init(...)` surely runs before in its function (an earlier statement of its
    block or of a block around it; NAME not an imported module, `parallel_state`, whose own
    arguments are not read); None where every call has one, and at least one call is read."""
    found = False
    for path, tree in trees:
        parents = _parents(tree)
        imported = {a.asname or a.name.split(".")[0] for n in ast.walk(tree)
                    if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        named = {loader} | {a.asname for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                            for a in n.names if a.name == loader and a.asname}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == loader:  # getattr(bridge, "load_megatron_model")
                return f"{path.name}:{node.lineno}: {loader} named by a string, called where it is not read"
            if not (isinstance(node, ast.Name) and node.id in named
                    or isinstance(node, ast.Attribute) and node.attr == loader):
                continue
            found = True
            call = parents.get(id(node))
            if not (isinstance(call, ast.Call) and call.func is node) or not _after(call, init, imported, parents):
                return f"{path.name}:{node.lineno}: {loader} may run before {init} sets the parallel state"
    return None if found else f"no call of {loader} read: it may run before {init} sets the parallel state"


def _after(node: ast.AST, init: str, imported: set[str], parents: dict[int, ast.AST]) -> bool:
    """Whether a statement `NAME.init(...)` (NAME no import) surely runs before `node`: an earlier
    statement of a block holding it, up to its function."""
    while not isinstance(node, (*FNS, ast.Lambda, ast.ClassDef, ast.Module)):
        parent = parents.get(id(node))
        if parent is None:
            return False
        if isinstance(node, ast.stmt):
            block = next((b for b in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
                          if isinstance(b, list) and node in b), [])
            for stmt in block[:block.index(node)] if node in block else []:
                call = stmt.value if isinstance(stmt, ast.Expr) else None
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == init
                        and isinstance(call.func.value, ast.Name) and call.func.value.id not in imported):
                    return True
        node = parent
    return False


def _megatron_lm_by_name(launch: LaunchConfig) -> bool:
    """The launch runs a script Megatron-LM's argument stage runs for by its name (rules/megatron-lm.toml
    `[[stage]]` mlm-arguments `launchers`: `torchrun pretrain_*.py`)."""
    stage = next(s for s in rulebook.load("megatron-lm").data["stage"] if s["name"] == "mlm-arguments")
    return launched_by(launch.launcher, stage["launchers"])


def _other_loops() -> list[tuple[frozenset[str], str]]:
    """(modules, name) of each rules/stacks.toml `[[schedule_entry]]` name outside megatron-core's
    schedules (Megatron-LM's pretrain, DeepSpeed's train_batch): its module and the packages
    above it, which re-export it (`from megatron.training import pretrain`); and with no modules
    (from any module) each `[training_step]` loop but those schedules (Megatron-Bridge's
    `finetune`, ms-swift's `sft_main`)."""
    stacks = rulebook.load("stacks").data
    out = []
    own = set()
    for e in stacks["schedule_entry"]:
        if f"{e['module']}." == SCHEDULES:
            own |= {n.rpartition(".")[2] for n in e["names"]}
            continue
        parts = e["module"].split(".")
        modules = frozenset(".".join(parts[:i]) for i in range(2, len(parts) + 1))
        out += [(modules, n.rpartition(".")[2]) for n in e["names"]]
    return out + [(frozenset(), n) for n in stacks["training_step"]["loops"] if n not in own]


def _names_loop(node: ast.AST, loops: list[tuple[frozenset[str], str]], called: set[int]) -> bool:
    """An import of such a name from its module or a package above it (from any module where it
    has none), or an attribute of one with modules (`engine.train_batch()`, `schedule.step()`;
    also `model.train()`, which only makes the note not given); one with no modules only as what
    a call calls (`finetune(cfg)`, `ft.finetune(cfg)`; `called`: the ids of calls' callees), never
    a value that bears its name (`args.finetune`)."""
    if isinstance(node, ast.ImportFrom):
        return any((not modules or node.module in modules) and any(a.name == name for a in node.names)
                   for modules, name in loops)
    named = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return any(named == name and (id(node) in called if not modules else isinstance(node, ast.Attribute))
               for modules, name in loops)


def _written_elsewhere(script: Path, keys: list[str], options: dict[str, dict[str, Any]],
                       trees: list[tuple[Path, ast.Module]] | None = None) -> dict[str, str]:
    """The keys a local module the script imports writes too (it may set them again after the
    script did); every key where the closure cannot be read. An argparse value such a module
    stores (`args.pp = 2`) is marked `stored` in `options`: its flag does not decide it. `trees`
    gains each file of the closure read, the script first."""
    stop = modeled_roots()
    out: dict[str, str] = {}
    fresh = False  # a local module's new object cannot be the script's provider (entry_constructs)
    try:
        for path, tree in iter_closure(script, stop):
            if trees is not None:
                trees.append((path, tree))
            if path == script:
                fresh = _fresh(tree, tuple(keys), stop)
            else:
                scopes = _scopes(tree)
                unnamed = [u[0] for scope in scopes for u in _unnamed(scope, tree, fresh)]  # any key's
                for k in keys:
                    lines = [*(w[0] for scope in scopes for w in _writes(scope, k, tree)), *unnamed]
                    if lines and k not in out:
                        out[k] = f"{path.name}:{min(lines)}"
                for dest, found in stores_of(tree, options).items():
                    options[dest]["stored"] = options[dest].get("stored") or found
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return dict.fromkeys(keys, f"a local module of {script.name} that cannot be read")
    return out


@functools.lru_cache(maxsize=64)
def _fresh(tree: ast.Module, keys: tuple[str, ...], stop: frozenset[str]) -> bool:
    """entry_constructs.bound_from_framework, cached on the parse (see _CACHED)."""
    return bound_from_framework(tree, list(keys), stop)


def _forward_only(launch: LaunchConfig, script: Path, options: dict[str, dict[str, Any]]) -> None:
    """Where the entry surely runs megatron-core's schedule forward only: `schedule_forward_only`
    among its values (and `schedule_microbatches`, where every call passes a literal count), and
    a `launch.not-pipeline` note at a pipeline size of 1 it surely sets (see the module docstring)."""
    named = names_schedule(launch) or ""
    calls, microbatches, unseen = _forward_only_calls(script) if named.startswith(SCHEDULES) else ([], None, None)
    if not calls:
        return
    rule = rulebook.load("megatron-core").data["forward_only"]
    param = rule["param"]
    passed = [f"{path.name}:{line}" for path, line in calls]
    at = f"{calls[0][0]}:{calls[0][1]}"
    if unseen is not None:
        launch.entry_values["schedule_forward_only"] = (UNKNOWN, _unseen_words(options if unseen[0] == script else {}, *unseen), at)
        return
    launch.entry_values["schedule_forward_only"] = (
        True, f"{script.name} calls megatron-core's {named.rpartition('.')[2]}() with {param}=True "
              f"({', '.join(passed[:2])}; no call passes another value)", at)
    if microbatches is not None:
        launch.entry_values["schedule_microbatches"] = (
            microbatches, f"{script.name}'s schedule calls pass {rule['microbatches']}={microbatches} at most "
                          f"({', '.join(passed[:2])}; each a literal)", at)
    pp = launch.entry_values.get("pipeline_model_parallel_size")
    if pp is None or pp[0] != 1 or type(pp[0]) is not int:
        return
    at = f"{script.name}:{pp[2].rpartition(':')[2]}"
    launch.diagnostics.append(Finding(
        "launch.not-pipeline", "info",
        f"{script.name} runs megatron-core's {named.rpartition('.')[2]}() forward only ({param}=True "
        f"at {', '.join(passed[:2])}, in every call that names it), at pipeline size 1 "
        f"({at}: {pp[1].removeprefix(pp[2] + ': ')}): "
        "forward_backward_no_pipelining sends nothing between stages",
        where=f"{launch.path}:{launch.command_line}", detail={"command": launch.launcher}))


def _unseen_words(options: dict[str, dict[str, Any]], path: Path, call: ast.Call) -> str:
    """Why a forward-only entry's schedule is undecided where its closure loads code at run time
    (`importlib.import_module(f"task_{args.task}")`): the call, and the flags of the entry's own
    argparse (`options`) its arguments read, which choose that code."""
    read = [n.attr for a in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(a)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.attr in options]
    flags = [options[d]["spellings"][-1] for d in dict.fromkeys(read)]
    chosen = f", chosen by {' and '.join(flags)} at run time" if flags else ""
    return (f"{path.name}:{call.lineno} {ast.unparse(call)} loads code not read here{chosen}: it may run the "
            f"schedule without forward_only, a training step")


def _forward_only_calls(script: Path) -> tuple[list[tuple[Path, int]], int | None, tuple[Path, ast.Call] | None]:
    """(file, line) of each `forward_only=True` the entry's closure passes, and the largest
    literal count of microbatches its schedule calls pass (None where one passes none or another
    value, or the count may be written after: a mapping's `d["num_microbatches"]`, a mapping or
    a call other than such a call naming it), and the first call of the closure that loads code
    not read (rules/stacks.toml `dynamic`: `importlib.import_module(f"task_{args.task}")`), whose
    code may train. A name bound once, at module level, to a literal is read as that literal
    (`_constant`). [] where a call may pass another value or none (a
    call or mapping that names the schedules' `step` keyword: the default, a training step; a
    call of a schedule, or of a function of the entry's own that hands its `**` keywords whole to
    a schedule (`_passes_on`), passing `**` keywords not written out; a schedule call passing on
    the `**` keywords of a function that may drop or change them, `kwargs.pop("forward_only")`;
    a mapping of them used otherwise than whole, `**kwargs`), a
    schedule escapes where its calls are not read (`_held`), a training loop runs the schedule,
    or the closure cannot be read whole. A call of a function of the entry's own that takes no
    `**` keywords is no schedule call: its body's calls are read (`run(forward_step_func=f)`).
    A call passing `**name`, every binding of which is a mapping naming the parameter, takes that
    mapping's value (`_given_by_mapping`; each mapping is read on its own)."""
    rule = rulebook.load("megatron-core").data["forward_only"]
    param, step, count = rule["param"], rule["step"], rule["microbatches"]
    keys = (param, step, count)
    loops = _other_loops()
    stop = modeled_roots()
    passed: list[tuple[Path, int]] = []
    counts: list[int | None] = []
    try:
        trees = list(iter_closure(script, stop))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return [], None, None
    held = _held(trees, rule["getter"])
    if len(trees) >= MAX_MODULES or held is None:
        return [], None, None  # the closure was cut, or a schedule escapes: an unread call may train
    dynamic = rulebook.load("stacks").data["no_pipeline"]["dynamic"]
    unseen = next(((path, node) for path, tree in trees for node, written, callee in calls(tree)
                   if (written in dynamic or callee in dynamic) and not _inert_import(node, tree)), None)
    for path, tree in trees:
        parents = _parents(tree)
        helpers = _helpers(tree)
        passing = {name for name, fn in helpers.items() if _passes_on(fn, param, held)}
        forwards = held | passing
        if any(opaque_keywords([n for n in _own_nodes(scope) if _calls_schedule(n, forwards)], scope, tree)
               for scope in _scopes(tree)):
            return [], None, None  # `fwd_bwd(**kwargs)` with keys not written out: it may train
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if _names_loop(node, loops, called):
                return [], None, None  # a training loop runs the schedule inside the framework
            if (isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del))
                    and isinstance(node.slice, ast.Constant) and node.slice.value in keys):
                if node.slice.value != count:
                    return [], None, None  # `kwargs["forward_only"] = ...`: a value not read here
                counts.append(None)  # a count written after the mapping
            given = _schedule_keywords(node)
            if isinstance(node, ast.Call) and param not in given and _calls_schedule(node, held):
                fn = _kwargs_handed(node, parents)
                if fn is not None and (fn.name not in passing or helpers[fn.name] is not fn):
                    return [], None, None  # `def _run(fwd, **kw): kw.pop("forward_only"); fwd(**kw)`: it may train
            if not given.keys() & set(keys) or (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in set(helpers) - forwards):
                continue  # a function of the entry's own, whose calls are read in its body
            if _mapping(node) and not _whole(node, parents, tree, keys):
                return [], None, None  # a mapping of the keywords that may change before its call
            if param not in given and step not in given:
                counts.append(None)  # a count written elsewhere: the call's may be another
                continue
            if param not in given and isinstance(node, ast.Call) and _given_by_mapping(node, tree, param):
                continue  # `fwd_bwd(forward_step_func=f, **kw)`: kw's mappings are read on their own
            value = _constant(given.get(param), tree, trees)
            if not (value is not None and value.value is True) or _merged_after(node, param):
                return [], None, None  # a call that may train
            passed.append((path, given[param].lineno))
            n = _constant(given.get(count), tree, trees)
            counts.append(n.value if n is not None and type(n.value) is int
                          and not _merged_after(node, count) else None)
    known = [c for c in counts if c is not None]
    return passed, max(known) if known and len(known) == len(counts) else None, unseen


def _passes_on(fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str, held: set[str]) -> bool:
    """Whether the entry's own function `fn` hands the schedule its `**` keywords as its callers
    give them: it takes no parameter named `param` (which would take that keyword out of them:
    `def _run(fwd, forward_only=None, **kwargs)`), and its `**` name is used only whole, as
    `**kwargs` in a call of a schedule (`held`); a `kwargs.pop(param)`, `del`, item assignment,
    `.update()`, rebinding or any other use may drop or change the value its callers pass."""
    args = fn.args
    if args.kwarg is None or param in {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}:
        return False
    parents = {id(c): p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id == args.kwarg.arg:
            use = parents.get(id(node))
            if not (isinstance(use, ast.keyword) and use.arg is None and _calls_schedule(parents.get(id(use)), held)):
                return False
    return True


def _kwargs_handed(call: ast.Call, parents: dict[int, ast.AST]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function holding `call` where the call passes that function's own `**` keywords on
    (`def _run(fwd, **kwargs): return fwd(**kwargs)`), else None."""
    fn = parents.get(id(call))
    while fn is not None and not isinstance(fn, FNS):
        fn = parents.get(id(fn))
    if not isinstance(fn, FNS) or fn.args.kwarg is None:
        return None
    name = fn.args.kwarg.arg
    return fn if any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == name for k in call.keywords) else None


def _inert_import(call: ast.Call, tree: ast.Module) -> bool:
    """An `import_module`/`__import__` of a module named, in every value its name may have, in a
    package that builds no pipeline (rules/stacks.toml [no_pipeline] `packages`) and in none of
    its pipeline modules ([training_step] `pipeline_modules`): a literal, or an f-string whose
    literal head names the package and a dot (NVIDIA-NeMo/Megatron-Bridge@067f987df0
    examples/conversion/compare_hf_and_megatron/compare.py:151-169 loads
    `f"transformers.models.{base_name}"`), directly or through a name every binding of which in
    the file is one. Such code cannot run megatron-core's schedule."""
    stacks = rulebook.load("stacks").data
    if not (call.args and dotted(call.func).rpartition(".")[2] in ("import_module", "__import__")):
        return False
    arg = call.args[0]
    values: list[ast.expr] = [arg]
    if isinstance(arg, ast.Name):
        values = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                  and [ast.unparse(t) for t in n.targets] == [arg.id]]
        if not values or binding_count(tree, arg.id) != len(values):
            return False
    for value in values:
        head = value.values[0] if isinstance(value, ast.JoinedStr) and value.values else value
        if not (isinstance(head, ast.Constant) and isinstance(head.value, str)):
            return False
        name = head.value if value is head else head.value.rpartition(".")[0]
        if name.split(".")[0] not in stacks["no_pipeline"]["packages"] or any(
                m.startswith(name) or name.startswith(m) for m in stacks["training_step"]["pipeline_modules"]):
            return False
    return True


def _constant(expr: ast.expr | None, tree: ast.Module, trees: list[tuple[Path, ast.Module]]) -> ast.Constant | None:
    """A literal, or a name `tree` binds once, by a module-level `NAME = literal`, and nothing
    rebinds (`FORWARD_ONLY = True`): no other binding of the name in the file (an assignment, a
    parameter, an import, a loop or `as` target, `global`), no star import in it (whose module,
    read or not, may bind it), no `globals()`/`vars()`/`exec()`, and no module of the closure stores it as an attribute (`gen.FORWARD_ONLY = False`, `setattr`)."""
    if isinstance(expr, ast.Constant):
        return expr
    if not isinstance(expr, ast.Name):
        return None
    name = expr.id
    value = next((s.value for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))
                  and [ast.unparse(t) for t in (s.targets if isinstance(s, ast.Assign) else [s.target])] == [name]
                  and isinstance(s.value, ast.Constant)), None)
    if value is None or binding_count(tree, name) != 1 or any(
            isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)):
        return None  # `from run_overrides import *`, before or after it, may bind the name again
    for _, other in trees:
        for node in ast.walk(other):
            if (isinstance(node, ast.Attribute) and node.attr == name and not isinstance(node.ctx, ast.Load)) \
                    or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and (node.func.id in ("globals", "vars", "exec")
                             or node.func.id == "setattr" and any(isinstance(a, ast.Constant) and a.value == name
                                                                  for a in node.args))):
                return None
    return value


def _held(trees: list[tuple[Path, ast.Module]], getter: str) -> set[str] | None:
    """The names and attributes that may hold one of megatron-core's schedules (rules/stacks.toml
    `[[schedule_entry]]`) across `trees`: the schedules', and those bound to them or to what
    `getter` returns (`fwd_bwd = get_forward_backward_func()`, `self.fb = ...`, an `as` name, a
    parameter of a function of the file handed one: `_run(fwd_bwd, **kwargs)`); None where one
    may escape that reading (handed to any other call, returned, stored otherwise), so that a
    call of it is not seen."""
    names = {n.rpartition(".")[2] for e in rulebook.load("stacks").data["schedule_entry"]
             if f"{e['module']}." == SCHEDULES for n in e["names"]}
    held, getters = set(names), {getter}
    for _ in range(MAX_MODULES):
        before = (len(held), len(getters))
        for _, tree in trees:
            if not _bind(tree, held, getters):
                return None
        if (len(held), len(getters)) == before:
            return held | getters
    return None


def _bind(tree: ast.Module, held: set[str], getters: set[str]) -> bool:
    """Add to `held` and `getters` what `tree` binds to a schedule or to `getter` (see `_held`);
    False where one escapes."""
    parents = _parents(tree)
    helpers = _helpers(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.alias) and node.asname and node.name.rpartition(".")[2] in held | getters:
            (getters if node.name.rpartition(".")[2] in getters else held).add(node.asname)
        named = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if named not in held | getters or not isinstance(getattr(node, "ctx", None), ast.Load):
            continue
        into = getters if named in getters else held
        value, up = node, parents.get(id(node))
        if isinstance(up, ast.Call) and up.func is value:
            if into is held:
                continue  # a schedule's call: its keywords are read
            value, up, into = up, parents.get(id(up)), held  # what the getter returns
            if isinstance(up, ast.Call) and up.func is value:
                continue
        if (isinstance(up, ast.Assign) and up.value is value
                and all(isinstance(t, (ast.Name, ast.Attribute)) for t in up.targets)):
            into |= {t.id for t in up.targets if isinstance(t, ast.Name)}
            into |= {t.attr for t in up.targets if isinstance(t, ast.Attribute)}
            continue
        param = _param_of(up, value, helpers)
        if param is None:
            return False
        into.add(param)
    return True


def _param_of(call: ast.AST | None, value: ast.AST, helpers: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> str | None:
    """The parameter of the entry's own function `call` calls that `value` is handed to by
    position or by name; None where `call` is no such call or the value goes elsewhere."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in helpers):
        return None
    args = helpers[call.func.id].args
    positional = [*args.posonlyargs, *args.args]
    at = next((i for i, a in enumerate(call.args) if a is value), None)
    if at is not None:
        return positional[at].arg if at < len(positional) else None
    named = next((k.arg for k in call.keywords if k.value is value), None)
    return named if named in {a.arg for a in [*positional, *args.kwonlyargs]} else None


@functools.lru_cache(maxsize=256)
def _helpers(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions `tree` defines at module level once and binds no other way, by name (cached
    per tree, read-only)."""
    defs = [f for f in tree.body if isinstance(f, FNS)]
    bound = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)]
    bound += [n.name for n in ast.walk(tree) if isinstance(n, (*FNS, ast.ClassDef))]
    bound += [a.asname or a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names]
    return {f.name: f for f in defs if bound.count(f.name) == 1}


@functools.lru_cache(maxsize=256)
def _parents(tree: ast.Module) -> dict[int, ast.AST]:
    """id(node) -> the node that holds it (cached per tree: read-only, and each case of a scan
    asks again of the same parse, entry_script.parsed)."""
    return {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}


def _calls_schedule(node: ast.AST | None, names: set[str]) -> bool:
    """A call of one of `names`, by name or attribute, or of what one returns (`get_forward_backward_func()(...)`)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func.func if isinstance(node.func, ast.Call) else node.func
    return (isinstance(func, ast.Name) and func.id in names) or (isinstance(func, ast.Attribute) and func.attr in names)


def _schedule_keywords(node: ast.AST) -> dict[str, ast.expr]:
    """The keywords a call passes by name, or the constant keys of a mapping (`fn(**{...})`,
    `dict(...)` is a call), with their values."""
    if isinstance(node, ast.Call):
        return {k.arg: k.value for k in node.keywords if k.arg is not None}
    if isinstance(node, ast.Dict):
        return {k.value: v for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return {}


def _mapping(node: ast.AST) -> bool:
    """A dict literal or a `dict(...)` call."""
    return isinstance(node, ast.Dict) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                                          and node.func.id == "dict")


def _given_by_mapping(call: ast.Call, tree: ast.Module, key: str) -> bool:
    """Whether `call` passes `key` through `**name`, a name every binding of which in the file is
    a mapping naming `key` (NVIDIA-NeMo/Megatron-Bridge@067f987df0
    examples/conversion/compare_hf_and_megatron/compare.py:935-973: `forward_kwargs = {...,
    "forward_only": True, ...}` then `fwd_bwd_function(forward_step_func=..., **forward_kwargs)`):
    the value is that mapping's, which the caller reads as a call of its own."""
    for k in call.keywords:
        if k.arg is not None or not isinstance(k.value, ast.Name):
            continue
        name = k.value.id
        values = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                  and [ast.unparse(t) for t in n.targets] == [name]]
        if values and binding_count(tree, name) == len(values) and all(
                _mapping(v) and key in _schedule_keywords(v) for v in values):
            return True
    return False


def _merged_after(node: ast.AST, key: str) -> bool:
    """A dict literal `{"key": v, **other}`, whose merged mapping may give `key` another value."""
    if not isinstance(node, ast.Dict):
        return False
    at = max(i for i, k in enumerate(node.keys) if isinstance(k, ast.Constant) and k.value == key)
    return any(k is None for k in node.keys[at + 1:])


def _whole(node: ast.AST, parents: dict[int, ast.AST], tree: ast.Module, keys: tuple[str, ...]) -> bool:
    """Whether the mapping `node` reaches a call as written: passed `**` at once, or bound to a
    name that every use passes `**` whole or reads or writes by another constant key; rebinding
    it only to other mappings (which are read on their own)."""
    up = parents.get(id(node))
    if isinstance(up, ast.keyword) and up.arg is None:
        return True
    if not (isinstance(up, ast.Assign) and len(up.targets) == 1 and isinstance(up.targets[0], ast.Name)):
        return False
    name = up.targets[0].id
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Name) and n.id == name):
            continue
        use = parents.get(id(n))
        if isinstance(n.ctx, ast.Store) and isinstance(use, ast.Assign) and _mapping(use.value) \
                and len(use.targets) == 1:
            continue
        if isinstance(use, ast.keyword) and use.arg is None:
            continue
        if (isinstance(use, ast.Subscript) and use.value is n and isinstance(use.slice, ast.Constant)
                and (isinstance(use.ctx, ast.Load) or use.slice.value not in keys)):
            continue
        return False
    return True


def _setting(tree: ast.Module, key: str, options: dict[str, dict[str, Any]], launch: LaunchConfig,
             called: set[str]) -> tuple[Any, str, int] | None:
    """(value, why, line) where every write of `key` in the file agrees and one surely runs;
    UNKNOWN where the file writes it otherwise (a value not read, writes that disagree, or one
    that may not run: the provider keeps its own value then); None where it never writes it."""
    scopes: list[tuple[ast.AST, list[ast.stmt]]] = [(f, f.body) for f in _scopes(tree)]
    values: list[tuple[Any, str, int]] = []
    sure = False
    for scope, body in scopes:
        for line, shown, expr in _writes(scope, key, tree):
            if expr is None:
                return UNKNOWN, shown, line
            got = _resolve(expr, scope, options, launch)
            if got is None:
                return UNKNOWN, f"{shown} = {ast.unparse(expr)}, a value not read statically", line
            values.append((got[0], f"{shown} = {ast.unparse(expr)} = {got[0]!r} ({got[1]})", line))
        runs = scope is tree or getattr(scope, "name", None) in called
        sure = sure or (runs and _surely(body, key))
    if not values:
        return None
    first = min(values, key=lambda v: v[2])
    unnamed = sorted(u for scope, _ in scopes for u in _unnamed(scope, tree))
    if unnamed:
        return UNKNOWN, f"{first[1]}, but {unnamed[0][1]} (line {unnamed[0][0]}) may write it too", first[2]
    if len({repr(v) for v, _, _ in values}) != 1:
        shown = ", ".join(f"{v!r} (line {line})" for v, _, line in values[:3])
        return UNKNOWN, f"{key} is written with different values: {shown}", first[2]
    if not sure:
        return UNKNOWN, (f"{first[1]}, but not on every path that runs (the provider keeps its own value "
                         f"otherwise)"), first[2]
    return first


# The readers below ask each scope of a parse the same questions once per key, and a scan asks
# again for each case of a setting it judges (auditor/scan.py `_cases`: up to 16 parses of the
# launch, each reading the entry); a parse is the same object for the same text
# (entry_script.parsed), so what depends only on it is cached on it (never mutated: callers get
# copies of the lists).
_CACHED = 8192


def _scopes(tree: ast.Module) -> list[ast.Module | ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module and each function of `tree`: the scopes whose own nodes the readers read."""
    return list(_scopes_of(tree))


@functools.lru_cache(maxsize=256)
def _scopes_of(tree: ast.Module) -> tuple[ast.Module | ast.FunctionDef | ast.AsyncFunctionDef, ...]:
    return (tree, *(f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))))


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of `scope`, not those of functions or classes defined inside it."""
    return list(_own_nodes_of(scope))


@functools.lru_cache(maxsize=_CACHED)
def _own_nodes_of(scope: ast.AST) -> tuple[ast.AST, ...]:
    out, todo = [], list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return tuple(out)


def _unnamed(scope: ast.AST, tree: ast.Module, fresh: bool = False) -> list[tuple[int, str]]:
    """(line, what) of each store of `scope` that may write any attribute or keyword: one by a
    name not written, or a call passing `**` keywords the file does not spell out
    (config/entry_stores.py); `fresh`: not a call building a new object (entry_constructs.py)."""
    return list(_unnamed_of(scope, tree, fresh))


@functools.lru_cache(maxsize=_CACHED)
def _unnamed_of(scope: ast.AST, tree: ast.Module, fresh: bool) -> tuple[tuple[int, str], ...]:
    nodes = _own_nodes(scope)
    calls = [n for n in nodes if not (fresh and constructs(n, scope, tree))]
    return tuple(sorted([*((line, "a store by a name not written") for line in unnamed_stores(nodes)),
                         *((line, "a call passing ** keywords not written")
                           for line in opaque_keywords(calls, scope, tree))]))


def _writes(scope: ast.AST, key: str, tree: ast.Module) -> list[tuple[int, str, ast.expr | None]]:
    """Each place `scope` (of `tree`) writes `key` by name (line, as shown, value): `x.key = v`,
    `x.key += v`, `{"key": v}`, `d["key"] = v`, `f(key=v)`, `setattr(x, "key", v)`; value None
    for a store of `.key` in a compound target (`a.tp, a.key = ...`), whose value is not read."""
    return list(_writes_of(scope, key, tree))


@functools.lru_cache(maxsize=_CACHED)
def _writes_of(scope: ast.AST, key: str, tree: ast.Module) -> tuple[tuple[int, str, ast.expr | None], ...]:
    out: list[tuple[int, str, ast.expr | None]] = []
    nodes = _own_nodes(scope)
    out += [(line, f"a store of .{key} in a compound target", None) for line in nested_attr_stores(nodes, key)]
    for node in nodes:
        if isinstance(node, ast.Assign):
            out += [(node.lineno, ast.unparse(t), node.value) for t in node.targets
                    if _is_attr(t, key) or (isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                                            and t.slice.value == key)]
        elif isinstance(node, ast.AugAssign) and _is_attr(node.target, key):
            out.append((node.lineno, ast.unparse(node.target), ast.BinOp(node.target, node.op, node.value)))
        elif isinstance(node, ast.AnnAssign) and _is_attr(node.target, key) and node.value:
            out.append((node.lineno, ast.unparse(node.target), node.value))
        elif isinstance(node, ast.Dict):
            out += [(node.lineno, repr(key), v) for k, v in zip(node.keys, node.values)
                    if isinstance(k, ast.Constant) and k.value == key]
        elif isinstance(node, ast.Call):
            out += [(node.lineno, f"{ast.unparse(node.func)}({key}=...)", k.value) for k in node.keywords
                    if k.arg == key]
            if (isinstance(node.func, ast.Name) and node.func.id == "setattr" and len(node.args) == 3
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value == key):
                out.append((node.lineno, f"setattr(..., {key!r})", node.args[2]))
    return tuple(out)


def _is_attr(target: ast.expr, key: str) -> bool:
    return isinstance(target, ast.Attribute) and target.attr == key


def _resolve(expr: ast.expr, scope: ast.AST, options: dict[str, dict[str, Any]],
             launch: LaunchConfig) -> tuple[Any, str] | None:
    """A literal or `args.DEST`, or a name `scope` binds once to one of them (`pp = args.pp`, or
    an element of a tuple assigned element by element: `tp, pp = args.tp, args.pp`), which no
    nested function rebinds (`nonlocal pp` or `global pp` there); else None."""
    if isinstance(expr, ast.Name):
        if any(isinstance(n, (ast.Nonlocal, ast.Global)) and expr.id in n.names for n in ast.walk(scope)):
            return None
        binds = [n for n in _own_nodes(scope) if isinstance(n, ast.Name) and n.id == expr.id
                 and isinstance(n.ctx, (ast.Store, ast.Del))]
        assigns = [v for n in _own_nodes(scope) if isinstance(n, ast.Assign) and len(n.targets) == 1
                   for v in [_bound_to(n.targets[0], n.value, expr.id)] if v is not None]
        params = isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and expr.id in {
            a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
        if len(binds) != 1 or len(assigns) != 1 or params:
            return None
        got = arg_value(assigns[0], options, launch)
        return None if got is None else (got[0], f"{expr.id} = {ast.unparse(assigns[0])}: {got[1]}")
    return arg_value(expr, options, launch)


def _bound_to(target: ast.expr, value: ast.expr, name: str) -> ast.expr | None:
    """The expression `target = value` binds `name` to: the whole value, or in `a, b = x, y`
    (no starred element, as many values as names) the value at the name's place."""
    if isinstance(target, ast.Name):
        return value if target.id == name else None
    if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
            and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))):
        return next((_bound_to(t, v, name) for t, v in zip(target.elts, value.elts)
                     if isinstance(t, ast.Name) and t.id == name), None)
    return None


def _surely(body: list[ast.stmt], key: str) -> bool:
    """Whether running `body` to its end surely assigns attribute `key`: on every branch of an
    `if`, inside a `with`; not inside a loop or `try` (which may skip it), nor after a statement
    that may `return` first (a `raise` ends the run: no schedule runs on a value it skipped)."""
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(_is_attr(t, key) for t in stmt.targets):
            return True
        if isinstance(stmt, ast.If) and _surely(stmt.body, key) and _surely(stmt.orelse, key):
            return True
        if isinstance(stmt, (ast.With, ast.AsyncWith)) and _surely(stmt.body, key):
            return True
        if isinstance(stmt, ast.Return) or any(isinstance(n, ast.Return) for n in _own_nodes(stmt)):
            return False
    return False
