"""Megatron-Bridge MIMO entries: each module's parallelism, and the pipeline across modules.

A MegatronMIMO training entry has no --pp of its own. It lays out its modules (a language model,
image or audio encoders) either from `--component NAME=tp=N,pp=N,...` (argparse action="append",
examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py) or in its own code, a dict of module
name -> `ModuleParallelismConfig(tensor_model_parallel_size=int(os.environ.get("MIMO_LLM_TP", 4)),
...)` (examples/megatron_mimo/llava/megatron_mimo_training_llava_audio.py), and sets the language
module's sizes on the language model config the pipeline schedule reads. Read here: those sizes,
with what the MIMO training path fixes on that config whatever the layout (no virtual stages,
megatron-core's P2P defaults where the entry's code names no P2P setting, no global
initialize_model_parallel splitting the whole world by the language module's sizes), and whether the
modules exchange across ranks (`bridge_key`): modules never share ranks, and each edge of the
provider's topology between two modules of the layout is a BridgeCommunicator batching
isend+irecv whatever batch_p2p_comm, a pipeline of two stages or more even at a language PP of 1.
All of it is rules/megatron-bridge.toml `[mimo]`. A layout not known statically, one the entry
would reject, or none given (the entry's own default layout) leaves the sizes unknown, with a
note naming the `--set` that decides them; a topology not known statically leaves `bridge_key`
unknown.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.config.effective import env_value
from auditor.config.entry_script import aliases, argparse_options, dotted, iter_closure
from auditor.config.expr import UNKNOWN
from auditor.config.model import Flag, LaunchConfig
from auditor.config.pyenv import entry_tree
from auditor.findings import Finding

# module name -> its known sizes (setting -> int, or UNKNOWN), in the order the entry gives them
Layout = dict[str, dict[str, Any]]


def read_mimo_components(launch: LaunchConfig) -> None:
    """Put the language module's sizes, the MIMO path's fixed values and whether the pipeline
    batches between modules into `launch.entry_values` where the entry runs MegatronMIMO
    training."""
    rules = rulebook.load("megatron-bridge").data.get("mimo")
    if not rules:
        return
    read = entry_tree(launch)
    if read is None:
        return
    entry, tree = read
    closure, complete = entry_closure(Path(entry.path))
    if not (_imports(closure, rules["module"]) or any(
            dotted(call.func).startswith(rules["module"] + ".") for _, call in calls_named(closure, ""))):
        return  # no MIMO entry: it neither imports MegatronMIMO nor calls into it by its dotted name
    loop = _runs_loop(closure, rules["trains"], complete)
    if loop is False:
        return  # one that cannot reach the MIMO training loop (a checkpoint conversion)
    if isinstance(loop, str):
        # whether the loop, and so the exchange between modules, runs is not read: never "no bridge"
        why = f"{entry.path}: whether the entry runs the MegatronMIMO training loop is not read ({loop})"
        launch.entry_values[rules["bridge_key"]] = (UNKNOWN, why, entry.path)
        launch.entry_values[rules["no_global_key"]] = (UNKNOWN, why, entry.path)
        launch.diagnostics.append(Finding(
            "launch.mimo-component", "info", f"the MegatronMIMO training loop is not found: {loop}",
            fix=f"--set {rules['bridge_key']}=true", where=f"{launch.path}:{launch.command_line}"))
        return
    where = f"{entry.path}: the MegatronMIMO training path ({rules['source']})"
    for key, value in rules["fixed"].items():
        launch.entry_values[key] = (value, where, entry.path)
    for key in rules["unset"]:
        launch.entry_values[key] = (None, where, entry.path)
    # each module's grid spans its own ranks: no global parallel state splits the whole world,
    # unless the entry's own code sets one up (then megatron-core's checks are its, with its sizes)
    launch.entry_values[rules["no_global_key"]] = _global_init(closure, rules, where, entry.path)
    _comm_settings(launch, rules, Path(entry.path), where)
    dest = next((d for d, o in argparse_options(tree).items() if rules["option"] in o["spellings"]), None)
    layout = (_from_components(launch, rules, dest, tree) if dest is not None
              else _from_code(launch, rules, tree, entry.path))
    if layout is None:
        # the layout decides whether two modules exchange: a MIMO run of one module has no bridge
        launch.entry_values[rules["bridge_key"]] = (
            UNKNOWN, f"{entry.path}: the MIMO layout is not read (see the note on it); the modules it "
                     f"lays out on disjoint ranks batch between them whatever batch_p2p_comm", entry.path)
        return
    language, at, why = layout[rules["language"]], *layout_origin(launch, rules, dest, entry.path)
    for key, value in language.items():
        launch.entry_values[key] = (value, f"{at}: {why}", at)
    _between_modules(launch, rules, tree, entry.path, layout)


def layout_origin(launch: LaunchConfig, rules: dict[str, Any], dest: str | None, entry: str) -> tuple[str, str]:
    """(file:line, words) of where the language module's sizes are written."""
    if dest is not None and dest in launch.flags:
        flag = next(f for f in [*launch.flag_repeats.get(dest, []), launch.flags[dest]]
                    if isinstance(f.value, str) and f.value.partition("=")[0] == rules["language"])
        return f"{launch.path}:{flag.line}", f"{rules['option']} {flag.value} (the language module)"
    if dest is not None:
        return entry, f"the entry's default layout, no {rules['option']} given (the language module's spec)"
    return entry, f"{rules['layout_class']}(...) of the `{rules['language']}` module in the entry's code"


def entry_closure(script: Path) -> tuple[list[tuple[Path, ast.Module]], bool]:
    """The entry and the local modules it imports, not megatron's own code (a checkout around
    the entry also holds it), and whether all of them were read: the entry alone, or nothing,
    where one cannot be read."""
    stop = frozenset(rulebook.load("megatron-core").data["framework"]["packages"])
    try:
        return list(iter_closure(script, stop)), True
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        try:
            return [(script, ast.parse(script.read_text(encoding="utf-8")))], False
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            return [], False


def calls_named(closure: list[tuple[Path, ast.Module]], name: str) -> list[tuple[Path, ast.Call]]:
    """The calls in the closure whose callee's last name is `name` (every call for "")."""
    return [(path, node) for path, tree in closure for node in ast.walk(tree)
            if isinstance(node, ast.Call) and (not name or dotted(node.func).rpartition(".")[2] == name)]


def _runs_loop(closure: list[tuple[Path, ast.Module]], trains: list[str], complete: bool) -> bool | str:
    """True where the closure runs a MIMO training loop (imports one of `trains`, or calls a
    dotted name ending in a loop's name: `megatron.bridge.training.train_megatron_mimo.
    train_megatron_mimo(...)`); False where nothing in it can reach one (it names no loop, and
    imports nothing, nor looks up a name in megatron's modules, not known statically); else why
    that is not known."""
    if any(_imports(closure, m) for m in trains):
        return True
    loops = {m.rpartition(".")[2] for m in trains}
    if any("." in dotted(call.func) for loop in loops for _, call in calls_named(closure, loop)):
        return True
    if not complete:
        return "a local module of the entry cannot be read"
    for path, tree in closure:
        megatron = {name for name, full in aliases(tree).items() if full.split(".")[0] == trains[0].split(".")[0]}
        for node in ast.walk(tree):
            words = ([node.id] if isinstance(node, ast.Name) else [node.attr] if isinstance(node, ast.Attribute)
                     else [node.name, node.asname or ""] if isinstance(node, ast.alias)
                     else [node.value] if isinstance(node, ast.Constant) and isinstance(node.value, str) else [])
            named = next((w for w in words if w in loops), None)
            if named:
                return f"{path.name}:{getattr(node, 'lineno', 0)} names {named} outside an import of {' or '.join(trains)}"
            if not isinstance(node, ast.Call) or all(isinstance(a, ast.Constant) for a in node.args[:2]):
                continue
            callee = dotted(node.func).rpartition(".")[2]
            if callee in ("import_module", "__import__") or callee == "getattr" and node.args and \
                    dotted(node.args[0]).split(".")[0] in megatron:
                return f"{path.name}:{node.lineno} imports or looks up a name not known statically"
    return False


def _imports(closure: list[tuple[Path, ast.Module]], module: str) -> bool:
    """A module of the closure imports `module` or one of its submodules, in any spelling:
    `import a.b.c`, `from a.b.c import f`, `from a.b import c` (c the module itself), or
    `importlib.import_module("a.b.c")`."""
    for _, tree in closure:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif (isinstance(node, ast.Call) and dotted(node.func).rpartition(".")[2] == "import_module"
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                names = [node.args[0].value]
            else:
                continue
            if any(n == module or n.startswith(module + ".") for n in names):
                return True
    return False


def _global_init(closure: list[tuple[Path, ast.Module]], rules: dict[str, Any], where: str,
                 entry: str) -> tuple[Any, str, str]:
    """`no_global_key`: False where the closure calls no initialize_model_parallel, or only
    megatron-core's with literal arguments splitting the world by 1 (which divides any world);
    unknown where one may split it by other sizes (its own, not the language module's) or is not
    megatron-core's function: whether and with what it runs is not read here."""
    name = rules["global_init"].rpartition(".")[2]
    calls = calls_named(closure, name)
    if not calls:
        return False, where, entry
    split = global_split(closure, rules)
    if split:
        return UNKNOWN, split, entry
    return False, f"{calls[0][0].name}:{calls[0][1].lineno}: the entry's own {name}(...) splits the world by 1 " \
                  f"(literal sizes), which divides any world; {where}", entry


def global_split(closure: list[tuple[Path, ast.Module]], rules: dict[str, Any] | None = None) -> str:
    """Why an initialize_model_parallel call of the closure may split the world by more than 1
    (sizes of its own, `initialize_model_parallel(1, 2)`, or a function not resolved to
    megatron-core's: rules/megatron-bridge.toml [mimo] `global_init`); "" where it calls none, or
    only megatron-core's with literal sizes of 1. The one reader of it (config/trains_nothing.py
    too: a size there on one rank stops the run or pipelines it)."""
    rules = rules if rules is not None else rulebook.load("megatron-bridge").data["mimo"]
    name = rules["global_init"].rpartition(".")[2]
    imported = {path: aliases(tree) for path, tree in closure}
    for path, call in calls_named(closure, name):
        head, _, rest = dotted(call.func).partition(".")
        callee = imported[path].get(head, head) + (f".{rest}" if rest else "")
        at = f"{path.name}:{call.lineno}"
        if callee != rules["global_init"]:
            return f"{at}: `{dotted(call.func) or name}(...)` may set up a global parallel state " \
                   f"({rules['global_init']} not resolved)"
        split = _splits(call, rules)
        if split:
            return f"{at}: {name}(...) sets up megatron-core's global parallel state with its own " \
                   f"sizes ({split}): its checks are not decided here"
    return ""


def _splits(call: ast.Call, rules: dict[str, Any]) -> str:
    """Why megatron-core's initialize_model_parallel call may split the world by more than 1;
    "" where its arguments are literals that split it by 1."""
    if len(call.args) > len(rules["global_positional"]) or any(isinstance(a, ast.Starred) for a in call.args):
        return "positional arguments not read"
    given = [*zip(rules["global_positional"], call.args), *((k.arg, k.value) for k in call.keywords)]
    for arg, value in given:
        if arg is None:
            return "**kwargs"
        literal = value.value if isinstance(value, ast.Constant) else value
        if arg in rules["global_other"] or literal is None and arg not in rules["global_ones"]:
            continue
        if not (arg in rules["global_ones"] and type(literal) is int and literal == 1):
            return f"{arg}={ast.unparse(value)}"
    return ""


def _comm_settings(launch: LaunchConfig, rules: dict[str, Any], script: Path, where: str) -> None:
    """megatron-core's P2P defaults, which nothing on the MIMO path changes: theirs where no
    module of the entry's local closure names a P2P setting (a keyword, an attribute, a
    comm_overlap config), unknown where one does (its value is not read here)."""
    names = set(rules["comm_names"])
    named = ""
    try:
        for path, tree in iter_closure(script):
            for node in ast.walk(tree):
                word = (node.arg if isinstance(node, ast.keyword) else node.attr if isinstance(node, ast.Attribute)
                        else node.id if isinstance(node, ast.Name) else node.value
                        if isinstance(node, ast.Constant) and isinstance(node.value, str) else None)
                if word in names:
                    named = f"{path.name}:{getattr(node, 'lineno', 0)} names {word}"
                    break
            if named:
                break
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        named = f"a local module of {script.name} cannot be read"
    for key, value in rules["comm_defaults"].items():
        launch.entry_values[key] = ((UNKNOWN, f"{named}: not read here", str(script)) if named
                                    else (value, where, str(script)))


def _from_components(launch: LaunchConfig, rules: dict[str, Any], dest: str, tree: ast.Module) -> Layout | None:
    """The layout the launch line's `--component` specs give, or where it gives none the entry's
    own default; None (with a note) where it is not known statically or the entry would reject it."""
    if dest not in launch.flags:
        if launch.unknown_words:
            _unread(launch, rules, None, "none is given, and a word not known statically may add one")
            return None
        default = _default_components(tree, dest)
        if default is None:
            _unread(launch, rules, None, "none is given, and the entry's own default layout is not read")
            return None
        return _layout(launch, rules, [(text, None) for text in default])
    given = [*launch.flag_repeats.get(dest, []), launch.flags[dest]]
    # argparse appends each one: not a repeated flag whose last value wins
    launch.diagnostics[:] = [d for d in launch.diagnostics
                             if not (d.kind == "launch.repeated-flag" and d.message.startswith(f"`{dest}`"))]
    if launch.unknown_words and dest not in launch.unknown_words[-1].after:
        _unread(launch, rules, given[-1], "a word not known statically may add another `--component`")
        return None
    unknown = [f for f in given if not isinstance(f.value, str)]
    if unknown:
        _unread(launch, rules, unknown[0], f"`{unknown[0].spelling} {unknown[0].value}` is not known statically")
        return None
    return _layout(launch, rules, [(str(f.value), f) for f in given])


def _layout(launch: LaunchConfig, rules: dict[str, Any], specs: list[tuple[str, Flag | None]]) -> Layout | None:
    """The modules' sizes of `specs` (text, the flag giving it or None for the entry's default);
    None (with a note) where the entry would reject them."""
    language = [text for text, _ in specs if text.partition("=")[0] == rules["language"]]
    if len(language) != 1:
        _unread(launch, rules, specs[0][1] if specs else None,
                f"{len(language)} `{rules['option']} {rules['language']}=...` given (the entry wants one)")
        return None
    layout: Layout = {}
    for text, flag in specs:
        name = text.partition("=")[0]
        sizes = _spec(text, rules)
        if sizes is None or name in layout:
            why = (f"`{text}` is no spec the entry's parser reads" if sizes is None
                   else f"`{rules['option']} {name}=...` is given twice (the entry refuses it)")
            _unread(launch, rules, flag, why)
            return None
        layout[name] = sizes
    return layout


def _default_components(tree: ast.Module, dest: str) -> list[str] | None:
    """The specs the entry uses where no `--component` is given: its add_argument's list literal
    default, or `args.DEST or NAME` of a module-level NAME = [literal specs]
    (finetune_qwen35_vl.py:98, :1255); None where neither is read."""
    nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument" \
                and _argparse_dest(node) == dest:
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            found = _str_list(default)
            if found is not None:
                return found
    names = {v.values[1].id for v in nodes if isinstance(v, ast.BoolOp) and isinstance(v.op, ast.Or)
             and len(v.values) == 2 and isinstance(v.values[0], ast.Attribute) and v.values[0].attr == dest
             and isinstance(v.values[1], ast.Name)}
    bound = [_str_list(n.value) for n in tree.body if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name) and t.id in names]
    if len(names) == 1 and len(bound) == 1:
        return bound[0]
    return None


def _argparse_dest(call: ast.Call) -> str | None:
    """The dest of an add_argument call, as argparse names it from its first long spelling."""
    given = next((k.value for k in call.keywords if k.arg == "dest"), None)
    if isinstance(given, ast.Constant) and isinstance(given.value, str):
        return given.value
    spellings = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = next((s for s in spellings if s.startswith("--")), spellings[0] if spellings else None)
    return long.lstrip("-").replace("-", "_") if long else None


def _str_list(node: ast.expr | None) -> list[str] | None:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    found = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return found if len(found) == len(node.elts) else None


def _spec(text: str, rules: dict[str, Any]) -> dict[str, int] | None:
    """`language=tp=4,pp=2,...` as the entry parses it: the sizes of the fields that set the
    language model config (absent ones at their default); None where the entry rejects it."""
    _, _, payload = text.partition("=")
    fields: dict[str, int] = {}
    for item in payload.split(","):
        key, _, raw = item.partition("=")
        if key not in rules["fields"] and key not in rules["other_fields"]:
            return None
        try:
            fields[key] = int(raw)
        except ValueError:
            return None
    return {setting: fields.get(key, rules["field_default"]) for key, setting in rules["fields"].items()}


def _from_code(launch: LaunchConfig, rules: dict[str, Any], tree: ast.Module, entry: str) -> Layout | None:
    """The layout the entry's own code builds: the one dict of module name ->
    `layout_class(...)` in a function the entry calls, its sizes literals or
    `int(os.environ.get("NAME", DEFAULT))` of the environment the launch gives the entry. None
    (with a note) where there is no such dict, more than one, or no language module in it."""
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    found = []
    for scope in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        if scope.name not in called:
            continue
        found += [n for n in ast.walk(scope) if isinstance(n, ast.Dict) and n.values and all(
            isinstance(k, ast.Constant) and isinstance(k.value, str) for k in n.keys) and all(
            isinstance(v, ast.Call) and dotted(v.func).rpartition(".")[2] == rules["layout_class"] for v in n.values)]
    if len(found) != 1:
        _unread(launch, rules, None, f"{len(found)} dicts of {rules['layout_class']}(...) in functions "
                                     f"{Path(entry).name} calls (one is read)")
        return None
    layout: Layout = {}
    settings = list(rules["fields"].values())
    for key, call in zip(found[0].keys, found[0].values):
        assert isinstance(key, ast.Constant) and isinstance(call, ast.Call)
        given = {k.arg: _int(k.value, launch) for k in call.keywords if k.arg in settings}
        if call.args or any(k.arg is None for k in call.keywords):
            given = dict.fromkeys(settings, UNKNOWN)  # positional or **kwargs: not read by name
        layout[str(key.value)] = {s: given.get(s, rules["field_default"]) for s in settings}
    if rules["language"] not in layout:
        _unread(launch, rules, None, f"the {rules['layout_class']} dict of {Path(entry).name} has no "
                                     f"`{rules['language']}` module")
        return None
    return layout


def _int(node: ast.expr, launch: LaunchConfig) -> Any:
    """An int literal, or `int(...)` of a literal or of os.environ.get("NAME", DEFAULT) /
    os.getenv("NAME", DEFAULT) / os.environ["NAME"] as the launch's environment has NAME (unset:
    the default); UNKNOWN otherwise."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if not (isinstance(node, ast.Call) and dotted(node.func) == "int" and len(node.args) == 1 and not node.keywords):
        return UNKNOWN
    inner = node.args[0]
    if isinstance(inner, ast.Constant):
        return _as_int(inner.value)
    if isinstance(inner, ast.Subscript) and dotted(inner.value) == "os.environ":
        name, default = inner.slice, None
    elif isinstance(inner, ast.Call) and dotted(inner.func) in ("os.environ.get", "os.getenv") and inner.args:
        name = inner.args[0]
        default = inner.args[1] if len(inner.args) > 1 else None
    else:
        return UNKNOWN
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return UNKNOWN
    value = env_value(launch.env, name.value, {})
    if value is None:
        return _as_int(default.value) if isinstance(default, ast.Constant) else UNKNOWN
    return _as_int(value)


def _as_int(value: Any) -> Any:
    """int(value) as Python's int() reads a literal or a variable's text; UNKNOWN where it would
    not (or the value is not known)."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return UNKNOWN
    return UNKNOWN


def _between_modules(launch: LaunchConfig, rules: dict[str, Any], tree: ast.Module, entry: str,
                     layout: Layout) -> None:
    """`bridge_key`: True where the provider's topology joins two modules of the layout (which
    never share ranks), unknown where the topology is not known statically."""
    edges = _topology(tree, rules, list(layout))
    key = rules["bridge_key"]
    if edges is None:
        launch.entry_values[key] = (UNKNOWN, f"{entry}: the `{rules['topology']}` {rules['provider']} gets is "
                                             "not known statically", entry)
        return
    joined = [(a, b) for a, bs in edges.items() for b in bs if a != b and a in layout and b in layout]
    if joined:
        a, b = joined[0]
        launch.entry_values[key] = (True, f"{entry}: modules `{a}` -> `{b}` on disjoint ranks exchange through a "
                                          f"BridgeCommunicator, batch_isend_irecv whatever batch_p2p_comm "
                                          f"({rules['source']})", entry)
    else:
        launch.entry_values[key] = (False, f"{entry}: the MIMO topology joins no two modules of the layout", entry)


def _topology(tree: ast.Module, rules: dict[str, Any], modules: list[str]) -> dict[str, list[str]] | None:
    """The provider's module graph: the `topology=` dict literal its calls in the entry pass,
    else the default (each other module feeds the language one); None where a call passes one
    not known statically, calls disagree, or the entry makes no provider."""
    default = {m: [rules["language"]] for m in modules if m != rules["language"]}
    seen: list[dict[str, list[str]] | None] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func)
        if name == f"{rules['provider']}.from_standard_provider":
            seen.append(default)
        elif name.rpartition(".")[2] == rules["provider"]:
            given = next((k.value for k in node.keywords if k.arg == rules["topology"]), None)
            if any(k.arg is None for k in node.keywords):
                seen.append(None)  # **kwargs may carry a topology
            elif given is None or isinstance(given, ast.Constant) and given.value is None:
                seen.append(default)
            else:
                seen.append(_literal_graph(given))
    if not seen or any(s is None for s in seen) or any(s != seen[0] for s in seen):
        return None
    return seen[0]


def _literal_graph(node: ast.expr) -> dict[str, list[str]] | None:
    """{"images": ["language"], "language": []} as written; None for anything else."""
    if not isinstance(node, ast.Dict):
        return None
    out: dict[str, list[str]] = {}
    for key, value in zip(node.keys, node.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, (ast.List, ast.Tuple))
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)):
            return None
        out[key.value] = [str(e.value) for e in value.elts if isinstance(e, ast.Constant)]
    return out


def _unread(launch: LaunchConfig, rules: dict[str, Any], flag: Flag | None, why: str) -> None:
    pp = rules["fields"]["pp"]
    launch.diagnostics.append(Finding(
        "launch.mimo-component", "info",
        f"the language module's sizes are not read from the MIMO layout: {why}",
        fix=f"--set {pp}=N", where=f"{launch.path}:{flag.line if flag else launch.command_line}"))
