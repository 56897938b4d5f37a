"""Megatron-Bridge MIMO entries: each module's parallelism as `--component NAME=tp=N,pp=N,...`.

A MegatronMIMO training entry (examples/megatron_mimo/*/finetune_*.py) has no --pp of its own:
its argparse takes `--component` repeatedly (action="append"), one spec per module, and sets the
language component's sizes on the language model config the pipeline schedule reads. The run's
pipeline is that language module's, so its sizes are read here from every `--component` the
launch line gives, with what the MIMO training path fixes on that config whatever the specs
(no virtual stages, megatron-core's P2P defaults): all of it rules/megatron-bridge.toml `[mimo]`.
A spec not known statically, one the entry would reject, or none given (the entry's own default
layout) leaves the sizes unknown, with a note naming the `--set` that decides them.
"""

from __future__ import annotations

import ast
from typing import Any

from auditor import rulebook
from auditor.config.entry_script import argparse_options
from auditor.config.model import Flag, LaunchConfig
from auditor.config.pyenv import entry_tree
from auditor.findings import Finding


def read_mimo_components(launch: LaunchConfig) -> None:
    """Put the language component's sizes, and the MIMO path's fixed values, into
    `launch.entry_values` where the entry is a MegatronMIMO one given `--component`."""
    rules = rulebook.load("megatron-bridge").data.get("mimo")
    if not rules:
        return
    read = entry_tree(launch)
    if read is None:
        return
    entry, tree = read
    if not _imports(tree, rules["module"]):
        return
    dest = next((d for d, o in argparse_options(tree).items() if rules["option"] in o["spellings"]), None)
    if dest is None:
        return
    where = f"{entry.path}: the MegatronMIMO training path ({rules['source']})"
    for key, value in rules["fixed"].items():
        launch.entry_values[key] = (value, where, entry.path)
    for key in rules["unset"]:
        launch.entry_values[key] = (None, where, entry.path)
    if dest not in launch.flags:
        _unread(launch, rules, None, "none is given, so the entry's own default layout holds")
        return
    given = [*launch.flag_repeats.get(dest, []), launch.flags[dest]]
    # argparse appends each one: not a repeated flag whose last value wins
    launch.diagnostics[:] = [d for d in launch.diagnostics
                             if not (d.kind == "launch.repeated-flag" and d.message.startswith(f"`{dest}`"))]
    if launch.unknown_words and dest not in launch.unknown_words[-1].after:
        _unread(launch, rules, given[-1], "a word not known statically may add another `--component`")
        return
    language = [f for f in given if isinstance(f.value, str) and f.value.partition("=")[0] == rules["language"]]
    unknown = [f for f in given if not isinstance(f.value, str)]
    if unknown or len(language) != 1:
        why = (f"`{unknown[0].spelling} {unknown[0].value}` is not known statically" if unknown else
               f"{len(language)} `{rules['option']} {rules['language']}=...` given (the entry wants one)")
        _unread(launch, rules, (unknown or given)[0], why)
        return
    flag = language[0]
    sizes = _spec(str(flag.value), rules)
    if sizes is None:
        _unread(launch, rules, flag, f"`{flag.value}` is no spec the entry's parser reads")
        return
    at = f"{launch.path}:{flag.line}"
    for key, value in sizes.items():
        launch.entry_values[key] = (value, f"{at}: {rules['option']} {flag.value} (the language module)", at)


def _imports(tree: ast.Module, module: str) -> bool:
    """The entry imports `module` or one of its submodules."""
    for node in ast.walk(tree):
        names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                 else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        if any(n == module or n.startswith(module + ".") for n in names):
            return True
    return False


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


def _unread(launch: LaunchConfig, rules: dict[str, Any], flag: Flag | None, why: str) -> None:
    pp = rules["fields"]["pp"]
    launch.diagnostics.append(Finding(
        "launch.mimo-component", "info",
        f"the language module's sizes are not read from `{rules['option']}`: {why}",
        fix=f"--set {pp}=N", where=f"{launch.path}:{flag.line if flag else launch.command_line}"))
