"""Megatron-LM MIMO entries: module grids on disjoint ranks, and the pipeline between them.

Megatron-LM's examples/mimo/pretrain_mimo.py runs the stock pretrain with a communicator its own
code builds: megatron-core's MultiModulePipelineCommunicator over one HyperCommGrid per module (a
modality encoder, the language model), the modules on disjoint ranks. Each edge of the
communicator's module graph is a BridgeCommunicator that batches isend+irecv whatever
batch_p2p_comm, so the run's pipeline spans the modules even where the language grid has PP 1;
the entry copies the language grid's flags onto the stock sizes the schedule reads, and passes
skip_model_parallel_init=True, so no initialize_model_parallel splits the whole world by them.
Read here, where the entry's local code builds that communicator: the language sizes, whether
two modules exchange (`bridge_key`; unknown where the graph or the one-module flag is not known
statically) and that no global parallel state is set up. All of it is rules/megatron-lm.toml
`[mimo_grids]`; the Bridge's MegatronMIMO entries are config/bridge_mimo.py's.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.config.bridge_mimo import calls_named, entry_closure
from auditor.config.entry_script import argparse_options
from auditor.config.expr import UNKNOWN
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import entry_tree


def read_mlm_mimo(launch: LaunchConfig) -> None:
    """Put the language grid's sizes, whether the modules exchange and whether megatron-core's
    global parallel state is set up into `launch.entry_values`, where the entry's local code
    builds the MIMO communicator."""
    rules = rulebook.load("megatron-lm").data.get("mimo_grids")
    read = entry_tree(launch) if rules else None
    if rules is None or read is None:
        return
    entry, _ = read
    closure, complete = entry_closure(Path(entry.path))
    if not complete:
        return
    built = calls_named(closure, rules["communicator"])
    if not built:
        return
    path, call = built[0]
    at = f"{path}:{call.lineno}"
    where = f"{at}: {rules['communicator']}(...) ({rules['source']})"
    options: dict[str, dict[str, Any]] = {}
    for _, tree in closure:
        options.update({k: v for k, v in argparse_options(tree).items() if k not in options})
    for dest, key in rules["language"].items():
        value = _size(launch, dest, options, rules["none_is"])
        if value is not None:
            launch.entry_values[key] = value
    launch.entry_values[rules["bridge_key"]] = _bridge(launch, rules, built, where, at)
    skips = [c for _, c in calls_named(closure, "") if any(
        k.arg == rules["skip_init"] and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in c.keywords)]
    if skips:
        launch.entry_values[rules["no_global_key"]] = (
            False, f"{entry.path}: {rules['skip_init']}=True (each module's grid spans its own ranks; "
                   f"{rules['source']})", entry.path)


def _size(launch: LaunchConfig, dest: str, options: dict[str, dict[str, Any]],
          none_is: dict[str, int]) -> tuple[Any, str, str] | None:
    """(value, why, where) of a language-grid flag: the launch's, else its parser's default;
    None where the closure defines no such flag."""
    flag = launch.flags.get(dest)
    if flag is not None:
        try:
            value: Any = int(str(flag.value)) if isinstance(flag.value, str) else UNKNOWN
        except ValueError:
            value = UNKNOWN
        return value, f"{launch.path}:{flag.line}: {flag.spelling} {flag.value} (the language grid)", \
            f"{launch.path}:{flag.line}"
    if dest not in options:
        return None
    if launch.unknown_words:
        return UNKNOWN, f"--{dest.replace('_', '-')} is not given, and a word not known statically may give it", \
            launch.path
    default = options[dest]["default"]
    value = none_is.get(dest, UNKNOWN) if default is None else default if type(default) is int else UNKNOWN
    return value, f"--{dest.replace('_', '-')} not given: the entry's default {default!r} (the language grid)", \
        launch.path


def _bridge(launch: LaunchConfig, rules: dict[str, Any], built: list[tuple[Path, ast.Call]], where: str,
            at: str) -> tuple[Any, str, str]:
    """True where the communicator's graph joins two modules and the one-module flag is not
    given; False where either says there is one module; unknown where not known statically."""
    single = launch.flags.get(rules["single"])
    if single is not None:
        if single.value is True:
            return False, f"{launch.path}:{single.line}: {single.spelling}: the language module alone, no bridge", at
        return UNKNOWN, f"{launch.path}:{single.line}: {single.spelling} {single.value} is not read", at
    if launch.unknown_words:
        return UNKNOWN, f"a word not known statically may give --{rules['single'].replace('_', '-')}", at
    joined = {_joined(call, rules["topology"]) for _, call in built}
    if joined == {True}:
        return True, f"{where}: modules on disjoint ranks exchange through a BridgeCommunicator, " \
                     "batch_isend_irecv whatever batch_p2p_comm", at
    if joined == {False}:
        return False, f"{where}: its module graph joins no two modules", at
    return UNKNOWN, f"{where}: its module graph is not known statically", at


def _joined(call: ast.Call, keyword: str) -> bool | None:
    """Whether the graph literal the communicator gets has an edge; None where it is no literal."""
    graph = next((k.value for k in call.keywords if k.arg == keyword), call.args[1] if len(call.args) > 1 else None)
    if not isinstance(graph, ast.Dict) or not all(isinstance(v, (ast.List, ast.Tuple)) for v in graph.values):
        return None
    return any(isinstance(v, (ast.List, ast.Tuple)) and v.elts for v in graph.values)
