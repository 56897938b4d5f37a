"""A `python SCRIPT` run that PyTorch Lightning spreads over its devices: NeMo 2's training
scripts build `nl.MegatronStrategy(pipeline_model_parallel_size=args.pp_size, ...)` and
`nl.Trainer(devices=args.devices, ...)` from their own argparse flags, and Lightning starts
devices x num_nodes processes itself. No launcher on the command line says so; the script's
code does.

Which constructors make a script such a run is a `[[launcher]]`'s `entry_builds`, which
parameters are the run's settings its rules file's `[[script_call]]`s (rules/nemo.toml); the
values are read by the shared entry-script reader (auditor/config/entry_script.py), never by
running anything. A value that is no literal, given flag or argparse default stays unknown.
"""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

from auditor import rulebook
from auditor.bash.values import Symbolic
from auditor.config.expr import UNKNOWN
from auditor.config.entry_script import aliases, argparse_options, call_value, dotted
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import entry_tree

WORLD = ("nproc_per_node", "nnodes")  # [[script_call]] keys that size the world, not settings


def script_file(script: str, launch_path: str) -> str | None:
    """Where a relative script is looked up (as config.pyenv.locate does): beside the launch
    script, else in the working directory (a job run from its repository's root)."""
    if os.path.isabs(script):
        return script if os.path.isfile(script) else None
    here = os.path.dirname(os.path.abspath(launch_path))
    return next((p for p in (os.path.join(here, script), os.path.abspath(script)) if os.path.isfile(p)), None)


def builds(script: str, launch_path: str, callees: tuple[str, ...]) -> bool:
    """Whether the Python script `script` calls one of `callees` (dotted, as imported)."""
    path = script_file(script, launch_path)
    if path is None:
        return False
    try:
        return bool(_called(path, _stamp(path)) & set(callees))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return False


def _stamp(path: str) -> tuple[int, int]:
    """What tells an edited file from the one read before: its mtime (ns) and size."""
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=64)
def _called(path: str, stamp: tuple[int, int]) -> frozenset[str]:
    """The dotted names (through the file's imports) of every call in the file at `path`;
    `stamp` keys the cache."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    imported = aliases(tree)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            head, _, rest = dotted(node.func).partition(".")
            out.add(imported.get(head, head) + (f".{rest}" if rest else ""))
    return frozenset(out)


def read_lightning_entry(launch: LaunchConfig) -> None:
    """Put the values the script's strategy calls state into `launch.entry_values`, and the
    world its Trainer asks for into `launch.nproc_per_node`/`nnodes`, each with its `file:line`."""
    claimant = launch.stack.claimants[0] if len(launch.stack.claimants) == 1 else None
    if claimant is None:
        return
    data = rulebook.load(claimant.name).data
    if not any(e.get("entry_builds") for e in data.get("launcher", [])):
        return
    read = entry_tree(launch)
    if read is None:
        return
    entry, tree = read
    for fact in data.get("entry_fact", []):
        at = f"{fact['source']} ({fact['read']})"
        launch.entry_values[fact["key"]] = (fact["value"], f"{claimant.name}: {fact['about']}", at)
    options = argparse_options(tree)
    called = _called(entry.path, _stamp(entry.path))
    for spec in data.get("script_call", []):
        found = call_value(tree, spec, options, launch)
        if found is None and not called & set(spec["callee"]):
            continue  # the script makes no such call: the framework's own value holds
        value, why, line = found or (UNKNOWN, f"{spec['callee'][0].rsplit('.', 1)[-1]}({spec['param']}=...) is "
                                              "not known statically (no literal, given flag or argparse default)", 0)
        at = f"{entry.path}:{line}" if line else entry.path
        if spec["key"] in WORLD:
            _world(launch, spec["key"], value, f"{why} ({at})")
        else:
            launch.entry_values[spec["key"]] = (value, f"{at}: {why}", at)


def _world(launch: LaunchConfig, key: str, value: object, why: str) -> None:
    """Lightning's devices (a count, a list of device indices, "auto"/-1: every visible device)
    or num_nodes, as the launch's world size; unknown where the script's value is."""
    if isinstance(value, list):
        value = len(value)
    elif isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        setattr(launch, key, value)
    elif value is UNKNOWN:
        setattr(launch, key, Symbolic(f"{key}: {why}"))
    else:
        setattr(launch, key, Symbolic(f"{value!r} (every visible GPU)" if key == WORLD[0] else repr(value)))
    launch.world_source[key] = why
