"""A positional config file the training entry is given (`train.py config.yaml`).

HfArgumentParser itself reads no positional file: entries built on it read one by their own
convention (LLaMA-Factory's read_args: a first argument ending in .yaml/.yml/.json, merged with
`key=value` words after it). Where a rules `[[positional_file]]` entry names the entry (its
script name, a package it imports, the environment switch that picks the front end), the file's
keys are read as the flags they stand for (`pipeline_model_parallel_size: 4` =
`--pipeline_model_parallel_size 4`) and the run is that entry's front end's (`front_end`).

Any other positional .yaml/.yml/.json is a file some code may read that no rule here reads: what
it can set is unknown, with the file named (configfiles.unknown_file), never megatron-core's
default as if stated.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import os
from typing import Any

from auditor.bash.values import Field, Symbolic
from auditor.config.configfiles import Unreadable, flag_keys, load_file, unknown_file, unread_keys
from auditor.config.flags import SCRIPT_ARGUMENTS, listed, unresolved, wholly_unknown
from auditor.config.frontend_parser import find_script
from auditor.config.model import Flag, LaunchConfig, UnknownWord
from auditor.findings import Finding
from auditor.rulebook import files
from auditor.rulebook.frameworks import launched_by
from auditor.rulebook.launchers import Spelling

SUFFIXES = (".yaml", ".yml", ".json")


def read_positional_file(config: LaunchConfig, args: list[Field], spelling: Spelling, path: str) -> bool:
    """Reads the first argument as the `[[positional_file]]` entry naming this entry says;
    whether one did (the run is then its front end's, and `args` are read)."""
    if not args or not isinstance(args[0].value, str):
        return False
    for rule in _rules():
        if args[0].value.endswith(tuple(rule["suffixes"])) and _names_entry(config, rule, path):
            front = next(f for f in spelling.front_ends if f["name"] == rule["front_end"])
            _read(config, args, rule, front, path)
            return True
    return False


def _rules() -> list[dict]:
    return [e for name in files.names() for e in files.load(name).data.get("positional_file", [])]


def _names_entry(config: LaunchConfig, rule: dict, path: str) -> bool:
    """The entry is the rule's, the switch on: a console script it names (`llamafactory-cli
    train`), or a script by its name that imports the rule's package."""
    if "env" in rule:
        switch = config.env.get(rule["env"])
        if switch is None or str(switch.value).lower() not in rule["env_true"]:
            return False
    if config.script is None:
        return launched_by(config.launcher, rule.get("launchers", []))
    script = str(config.script)
    if not any(fnmatch.fnmatchcase(os.path.basename(script), p) for p in rule["scripts"]):
        return False
    found = find_script(path, config.script_read or script, entry=True)
    try:
        tree = ast.parse(found.read_text(encoding="utf-8")) if found is not None else None
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return False
    tops = {n.split(".")[0] for node in ast.walk(tree or ast.Module(body=[], type_ignores=[]))
            for n in ([a.name for a in node.names] if isinstance(node, ast.Import) else
                      [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])}
    return bool(tops & set(rule["imports"]))


def _read(config: LaunchConfig, args: list[Field], rule: dict, front: dict, path: str) -> None:
    first = args[0]
    name = str(first.value)
    where = f"{path}:{first.line}"
    launched = config.launcher
    config.launcher = f"{front['launcher']} " + (os.path.basename(str(config.script)) if config.script
                                                 else launched.rpartition(" ")[2])
    config.diagnostics.append(Finding(
        "launch.front-end", "info", f"{front['what']}, its settings read from {name} (rules: {rule['name']})",
        where=where, detail={"front_end": front["name"], "launched": launched}))
    try:
        found, data = load_file(name, path, config.workdir, config.copies)
    except Unreadable as exc:
        unknown_file(config, name, str(exc), first.line, where, env_keys=())
        return
    for key, value in data.items():
        values = tuple(str(v) for v in value) if isinstance(value, list) else (_text(value),)
        config.flags[str(key)] = Flag(str(key), " ".join(values) if len(values) != 1 else values[0],
                                      first.line, f"{key} (from {name})", values)
    _overrides(config, args[1:], name, path)
    config.diagnostics.append(Finding("launch.config-file", "info", f"read {found}: {len(data)} setting(s)",
                                      where=where))


def _text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, dict) else str(value)


def _overrides(config: LaunchConfig, words: list[Field], name: str, path: str) -> None:
    """`key=value` words after the file override its keys (OmegaConf.from_cli); any other word is
    no override: a word not known statically is the training command's unknown word
    (flags.unresolved), an option word names a key whose value is then unknown (parse_dict
    rejects the option as a key of its own)."""
    opened: list[tuple[UnknownWord, int]] = []
    order: list[str] = []
    for word in words:
        value = word.value
        if not isinstance(value, str) and (str(value) in SCRIPT_ARGUMENTS or wholly_unknown(value, config)):
            said = unresolved(config, word, path, "overrides")  # the one rule: flags.open_settings
            if said is not None:
                opened.append((said, len(order)))
            continue
        if isinstance(value, str) and "=" in value and not value.startswith("-"):
            key, _, given = value.partition("=")
            top = key.split(".")[0]
            config.flags[top] = (Flag(key, given, word.line, value, (given,)) if top == key else
                                 Flag(top, Symbolic(f"{value}: a nested override"), word.line, value))
            order.append(top)
            continue
        keys = (unread_keys(config) if not isinstance(value, str)
                else [value.lstrip("-").replace("-", "_")] if value.startswith("-") else [])
        for key in keys:
            config.flags[key] = Flag(key, Symbolic(f"{value} after {name}: not a `key=value` override"),
                                     word.line, str(value))
        if keys:
            config.diagnostics.append(Finding(
                "launch.config-file-override", "warning",
                f"`{value}` after {name} is no `key=value` override (OmegaConf.from_cli reads only "
                f"those): {listed(keys, 4)} unknown",
                fix="write it as KEY=VALUE, or give the setting with --set KEY=VALUE",
                where=f"{path}:{word.line}"))
    for said, at in opened:
        said.after = frozenset(order[at:])


def unread_positional(config: LaunchConfig, args: list[Field], path: str, spelling: Spelling) -> None:
    """A positional .yaml/.yml/.json the entry is given that no rule reads for its front end:
    every setting its front end's flags give (a `[[positional_file]]` front end's where the
    rule names the launcher but its switch is off; else the front end it is read as), not on the
    command line, is unknown."""
    named = [f"{f['launcher']} x" for rule in _rules() if launched_by(config.launcher, rule.get("launchers", []))
             for f in spelling.front_ends if f["name"] == rule["front_end"]]
    for word in args:
        if isinstance(word.value, str) and word.value.endswith(SUFFIXES) and word.value in config.positionals:
            keys = flag_keys(named[0]) if named else unread_keys(config)
            entry = os.path.basename(str(config.script)) if config.script else config.launcher
            unknown_file(config, word.value, f"{entry} is given it as an "
                         "argument, and no rule here says how its front end reads it", word.line,
                         f"{path}:{word.line}", env_keys=(), keys=keys)
            return
