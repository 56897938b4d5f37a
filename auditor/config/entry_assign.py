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
rules/megatron-core.toml `[forward_only]`; none passes another value or leaves the default, and
no training loop is named), at a pipeline size of 1 read so, megatron-core runs
forward_backward_no_pipelining and sends nothing between stages: a `launch.not-pipeline` note
(NOT A PIPELINE RUN). At PP > 1 the forward-only schedule sends activations between stages:
scanned, with `schedule_forward_only` True among the entry's values, and `schedule_microbatches`
where every such call passes a literal `num_microbatches` (rules/megatron-core.toml
mcore.forward-only-one-way and mcore.interleaved-microbatches read them). `may_write` says where
the entry may write a setting other than None (config/generate_entry.py asks it of the pipeline
layout a checkpoint could carry onto the entry's provider).
"""

from __future__ import annotations

import ast
from typing import Any

from pathlib import Path

from auditor import rulebook
from auditor.config.entry_constructs import bound_from_framework, constructs
from auditor.config.entry_library import library_file, library_imports, library_sizes
from auditor.config.entry_schedule import names_schedule
from auditor.config.entry_script import MAX_MODULES, arg_value, argparse_options, iter_closure, stores_of
from auditor.config.entry_stores import nested_attr_stores, opaque_keywords, unnamed_stores
from auditor.config.entry_stack import modeled_packages
from auditor.config.expr import UNKNOWN
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import entry_tree
from auditor.findings import Finding
from auditor.rulebook.frameworks import launched_by

SCHEDULES = "megatron.core.pipeline_parallel.schedules."

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
    _forward_only(launch, Path(entry.path))


def may_write(launch: LaunchConfig, attrs: list[str]) -> str | None:
    """Where the entry may write one of `attrs` (on its model provider, or anywhere) a value that
    is not None, in words (file:line); None where nothing it runs can: the script writes each
    only as None (a literal, or `args.DEST` whose option the launch line leaves at a None
    default), writes nothing by a name not written, and neither a local module it imports nor a
    module of its checkout's `src/` that it or one of those imports from writes one, other than as
    a literal None."""
    read = entry_tree(launch)
    if read is None:
        return "the entry script is not read"
    entry, tree = read
    script = Path(entry.path)
    options = argparse_options(tree)
    scopes = [tree, *(f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)))]
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
    elsewhere = _written_elsewhere(script, attrs, {k: dict(v) for k, v in options.items()})
    if elsewhere:
        return f"{min(elsewhere.values())} writes {', '.join(sorted(elsewhere))}"
    stop = frozenset(m.split(".")[0] for m in modeled_packages())
    try:
        modules = dict.fromkeys(m for _, t in iter_closure(script, stop) for m in library_imports(t))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return f"a local module of {script.name} that cannot be read"
    for module in modules:
        lib = library_file(script, module)
        if lib is None:
            continue
        try:
            lib_tree = ast.parse(lib.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            return f"{lib.name}, which the entry imports from, cannot be read"
        lib_scopes = [lib_tree, *(f for f in ast.walk(lib_tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)))]
        for attr in attrs:
            for scope in lib_scopes:
                for line, shown, expr in _writes(scope, attr, lib_tree):
                    if not (isinstance(expr, ast.Constant) and expr.value is None):
                        return f"{lib.name}:{line}: {shown}"
        lib_unnamed = sorted(u for scope in lib_scopes for u in _unnamed(scope, lib_tree))
        if lib_unnamed:
            return f"{lib.name}:{lib_unnamed[0][0]}: {lib_unnamed[0][1]}"
    return None


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


def _names_loop(node: ast.AST, loops: list[tuple[frozenset[str], str]]) -> bool:
    """An import of such a name from its module or a package above it (from any module where it
    has none), a bare name of one with no modules (`finetune(cfg)`), or an attribute of that name
    (`engine.train_batch()`, `schedule.step()`; also `model.train()`, which only makes the
    note not given)."""
    if isinstance(node, ast.ImportFrom):
        return any((not modules or node.module in modules) and any(a.name == name for a in node.names)
                   for modules, name in loops)
    if isinstance(node, ast.Name):
        return any(not modules and node.id == name for modules, name in loops)
    return isinstance(node, ast.Attribute) and any(node.attr == name for _, name in loops)


def _written_elsewhere(script: Path, keys: list[str], options: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The keys a local module the script imports writes too (it may set them again after the
    script did); every key where the closure cannot be read. An argparse value such a module
    stores (`args.pp = 2`) is marked `stored` in `options`: its flag does not decide it."""
    stop = frozenset(m.split(".")[0] for m in modeled_packages())
    out: dict[str, str] = {}
    fresh = False  # a local module's new object cannot be the script's provider (entry_constructs)
    try:
        for path, tree in iter_closure(script, stop):
            if path == script:
                fresh = bound_from_framework(tree, keys, stop)
            else:
                scopes = [tree, *(f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)))]
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


def _forward_only(launch: LaunchConfig, script: Path) -> None:
    """Where the entry surely runs megatron-core's schedule forward only: `schedule_forward_only`
    among its values (and `schedule_microbatches`, where every call passes a literal count), and
    a `launch.not-pipeline` note at a pipeline size of 1 it surely sets (see the module docstring)."""
    named = names_schedule(launch) or ""
    calls, microbatches = _forward_only_calls(script) if named.startswith(SCHEDULES) else ([], None)
    if not calls:
        return
    rule = rulebook.load("megatron-core").data["forward_only"]
    param = rule["param"]
    passed = [f"{path.name}:{line}" for path, line in calls]
    at = f"{calls[0][0]}:{calls[0][1]}"
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


def _forward_only_calls(script: Path) -> tuple[list[tuple[Path, int]], int | None]:
    """(file, line) of each `forward_only=True` the entry's closure passes, and the largest
    literal count of microbatches its schedule calls pass (None where one passes none or another
    value); [] where a call may pass another value or none (a call or mapping that names the
    schedules' `step` keyword: the default, a training step; a call of a schedule passing `**`
    keywords not written out), a training loop runs the schedule, or the closure cannot be read
    whole."""
    rule = rulebook.load("megatron-core").data["forward_only"]
    param, step, count = rule["param"], rule["step"], rule["microbatches"]
    loops = _other_loops()
    stop = frozenset(m.split(".")[0] for m in modeled_packages())
    passed: list[tuple[Path, int]] = []
    counts: list[int | None] = []
    read = 0
    try:
        for path, tree in iter_closure(script, stop):
            read += 1
            scopes = [tree, *(f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)))]
            held = _schedule_names(tree)
            if any(opaque_keywords([n for n in _own_nodes(scope) if _calls_schedule(n, held)], scope, tree)
                   for scope in scopes):
                return [], None  # `fwd_bwd(**kwargs)` with keys not written out: it may train
            for node in ast.walk(tree):
                if _names_loop(node, loops):
                    return [], None  # a training loop runs the schedule inside the framework
                if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
                        and isinstance(node.slice, ast.Constant) and node.slice.value in (param, step)):
                    return [], None  # `kwargs["forward_only"] = ...`: a value not read here
                given = _schedule_keywords(node)
                if param not in given and step not in given:
                    continue
                value = given.get(param)
                if not (isinstance(value, ast.Constant) and value.value is True):
                    return [], None  # a call that may train
                passed.append((path, value.lineno))
                n = given.get(count)
                counts.append(n.value if isinstance(n, ast.Constant) and type(n.value) is int else None)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return [], None
    if read >= MAX_MODULES:
        return [], None  # the closure was cut: an unread module may train
    known = [c for c in counts if c is not None]
    return passed, max(known) if known and len(known) == len(counts) else None


def _schedule_names(tree: ast.Module) -> set[str]:
    """megatron-core's schedule functions (rules/stacks.toml `[[schedule_entry]]`) and the names
    and attributes `tree` binds to what one of them returns (`fwd_bwd = get_forward_backward_func()`,
    `self.fb = ...`)."""
    names = {n.rpartition(".")[2] for e in rulebook.load("stacks").data["schedule_entry"]
             if f"{e['module']}." == SCHEDULES for n in e["names"]}
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _calls_schedule(node.value, names):
            bound |= {t.id if isinstance(t, ast.Name) else t.attr for t in node.targets
                      if isinstance(t, (ast.Name, ast.Attribute))}
    return names | bound


def _calls_schedule(node: ast.AST, names: set[str]) -> bool:
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


def _setting(tree: ast.Module, key: str, options: dict[str, dict[str, Any]], launch: LaunchConfig,
             called: set[str]) -> tuple[Any, str, int] | None:
    """(value, why, line) where every write of `key` in the file agrees and one surely runs;
    UNKNOWN where the file writes it otherwise (a value not read, writes that disagree, or one
    that may not run: the provider keeps its own value then); None where it never writes it."""
    scopes: list[tuple[ast.AST, list[ast.stmt]]] = [(tree, tree.body)]
    scopes += [(f, f.body) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
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


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of `scope`, not those of functions or classes defined inside it."""
    out, todo = [], list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _unnamed(scope: ast.AST, tree: ast.Module, fresh: bool = False) -> list[tuple[int, str]]:
    """(line, what) of each store of `scope` that may write any attribute or keyword: one by a
    name not written, or a call passing `**` keywords the file does not spell out
    (config/entry_stores.py); `fresh`: not a call building a new object (entry_constructs.py)."""
    nodes = _own_nodes(scope)
    calls = [n for n in nodes if not (fresh and constructs(n, scope, tree))]
    return sorted([*((line, "a store by a name not written") for line in unnamed_stores(nodes)),
                   *((line, "a call passing ** keywords not written") for line in opaque_keywords(calls, scope, tree))])


def _writes(scope: ast.AST, key: str, tree: ast.Module) -> list[tuple[int, str, ast.expr | None]]:
    """Each place `scope` (of `tree`) writes `key` by name (line, as shown, value): `x.key = v`,
    `x.key += v`, `{"key": v}`, `d["key"] = v`, `f(key=v)`, `setattr(x, "key", v)`; value None
    for a store of `.key` in a compound target (`a.tp, a.key = ...`), whose value is not read."""
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
    return out


def _is_attr(target: ast.expr, key: str) -> bool:
    return isinstance(target, ast.Attribute) and target.attr == key


def _resolve(expr: ast.expr, scope: ast.AST, options: dict[str, dict[str, Any]],
             launch: LaunchConfig) -> tuple[Any, str] | None:
    """A literal or `args.DEST`, or a name `scope` binds once to one of them; else None."""
    if isinstance(expr, ast.Name):
        binds = [n for n in _own_nodes(scope) if isinstance(n, ast.Name) and n.id == expr.id
                 and isinstance(n.ctx, (ast.Store, ast.Del))]
        assigns = [n for n in _own_nodes(scope) if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.targets[0], ast.Name) and n.targets[0].id == expr.id]
        params = isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and expr.id in {
            a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
        if len(binds) != 1 or len(assigns) != 1 or params:
            return None
        got = arg_value(assigns[0].value, options, launch)
        return None if got is None else (got[0], f"{expr.id} = {ast.unparse(assigns[0].value)}: {got[1]}")
    return arg_value(expr, options, launch)


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
