"""Config files the trainer reads: their settings join the training command's flags.

How each front end reads its file is in the rules (`[[config_file]]`): ms-swift's first argument
(`megatron sft config.yaml`: keys as `--KEY VALUE` in the file's place, its `ENV:` mapping as
environment variables the environment lacks; rules/ms-swift.toml), Megatron-LM's `--yaml-cfg`
(the file replaces every other flag; rules/megatron-lm.toml). Files are read with json and
yaml.safe_load, as both front ends read them.

A file that cannot be read (not found from where the script may run, not parseable, not a
mapping) is unknown, not a default: every setting the rules read from flags that the command
line does not give becomes unknown, with the file named, and so does a world size it could set.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from auditor.bash.absent import absent_from_launch_dirs
from auditor.bash.checkout_copy import in_copy
from auditor.bash.textfile import read_bounded
from auditor.bash.values import EnvVar, Field, Scalar, Symbolic
from auditor.config.flags import STARTUP, normalise
from auditor.config.frontend_parser import find_script
from auditor.config.model import Flag, LaunchConfig
from auditor.findings import Finding
from auditor.rulebook import files
from auditor.rulebook.frameworks import launched_by


class Unreadable(Exception):
    """Why a config file cannot be read."""


def read_config_files(config: LaunchConfig, args: list[Field], launcher: dict, path: str) -> None:
    """Merges the config file the training command passes (if any) into `config`: called after
    the command line's flags are read, before the world size is."""
    for rule in _rules(config.launcher):
        if rule["kind"] == "first-argument" and launcher.get("program") and args:
            _first_argument(config, args[0], rule, launcher, path)
        elif rule["kind"] == "replaces-flags" and rule.get("flag") in config.flags:
            _replaces_flags(config, config.flags[rule["flag"]], rule, path)


def _rules(launcher: str) -> list[dict]:
    """The [[config_file]] entries whose launchers run this command, in any release (which one
    the script was written for is not known when it is read)."""
    return [e for name in files.names() for e in files.load(name).data.get("config_file", [])
            if launched_by(launcher, e["launchers"])]


def _first_argument(config: LaunchConfig, first: Field, rule: dict, launcher: dict, path: str) -> None:
    name = first.value
    if not (isinstance(name, str) and name.endswith(tuple(rule.get("suffixes", ())))):
        return
    if config.positionals and config.positionals[0] == name:
        config.positionals.pop(0)
    where = f"{path}:{first.line}"
    try:
        found, data = load_file(name, path, config.workdir, config.copies)
    except Unreadable as exc:
        unknown_file(config, name, str(exc), first.line, where,
                 env_keys=(launcher.get("env_nproc"), launcher.get("env_nnodes")))
        return
    env = data.pop(rule["env_key"], None) or {} if "env_key" in rule else {}
    for key, value in env.items() if isinstance(env, dict) else ():
        have = config.env.get(str(key))
        if have is not None and have.how != "assign":
            if str(have.value) != str(value):
                config.diagnostics.append(Finding(
                    "launch.config-file-env", "info",
                    f"{key}={value} in the {rule['env_key']} of {found} is not used: the environment "
                    f"already has {key}={have.value}", where=where))
            continue
        config.env[str(key)] = EnvVar(str(key), str(value), first.line, "inline")
    given: list[str] = []
    for key, value in data.items():
        flag = normalise(f"--{key}")
        values = tuple(str(v) for v in value) if isinstance(value, list) else (_swift_text(value),)
        if flag in config.flags:
            continue  # the command line gives it after the file: argparse keeps the last
        config.flags[flag] = Flag(flag, " ".join(values) if len(values) != 1 else values[0],
                                  first.line, f"--{key} (from {name})", values)
        given.append(str(key))
    config.diagnostics.append(Finding(
        "launch.config-file", "info",
        f"read {found}: {len(given)} setting(s)"
        + (f", environment {', '.join(map(str, env))}" if env else ""), where=where))


def _swift_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)


def _replaces_flags(config: LaunchConfig, flag: Flag, rule: dict, path: str) -> None:
    """`--yaml-cfg FILE`: the file's settings replace every command-line flag. Given only on a
    branch this reading cannot decide (`Flag.maybe`), the run's settings are the command line's
    or the file's (FILE the branch's text): each setting they do not agree on is not known."""
    if flag.maybe:
        written = dict(config.flags)
        name = _branch_value(config, flag)
        _replaced(config, replace(flag, value=name, values=(name,)), rule, path, False)
        config.flags = _either(written, config.flags, flag)
        return
    _replaced(config, flag, rule, path, True)


def _branch_value(config: LaunchConfig, flag: Flag) -> Scalar:
    """The file each branch that gives `flag` names (`config.branch_values`: `CFG_ARGS="--yaml-cfg
    gpt.yaml"` or `--yaml-cfg=gpt.yaml` on one branch), where they name one; else its value, not
    known."""
    names: set[str] = set()
    glued = f"{flag.spelling}="
    for text in config.branch_values.get(str(flag.value)) or ():
        words = text.split()
        names.update(words[k + 1] for k in range(len(words) - 1) if words[k] == flag.spelling)
        names.update(w.removeprefix(glued) for w in words if w.startswith(glued))
    return names.pop() if len(names) == 1 else flag.value


def _either(written: dict[str, Flag], replaced: dict[str, Flag], flag: Flag) -> dict[str, Flag]:
    """The settings where `flag` may replace the command line's: those the two agree on, the
    rest not known (`flag` may be given or not)."""
    out: dict[str, Flag] = {}
    for key in dict.fromkeys([*written, *replaced]):
        mine, theirs = written.get(key), replaced.get(key)
        if mine is not None and theirs is not None and str(mine.value) == str(theirs.value):
            out[key] = mine
            continue
        known = mine or theirs
        assert known is not None
        out[key] = Flag(key, Symbolic(f"the command line's {key} or {flag.spelling}'s"), known.line,
                        known.spelling, (), True)
    return out


def _replaced(config: LaunchConfig, flag: Flag, rule: dict, path: str, sure: bool) -> None:
    where = f"{path}:{flag.line}"
    ignored = [f.spelling for name, f in config.flags.items() if name != rule["flag"]]
    if isinstance(flag.value, Symbolic) or not isinstance(flag.value, str):
        found, data, why = None, None, f"`{flag.value}` is not known statically"
    else:
        try:
            found, data = load_file(flag.value, path, config.workdir, config.copies)
            why = ""
        except Unreadable as exc:
            found, data, why = None, None, str(exc)
            if sure:  # a branch that may not run stops nothing surely
                surely_missing(config, flag.value, flag.spelling, rule.get("file_loaded"), path)
    config.flags = {rule["flag"]: flag}
    if ignored and sure:
        config.diagnostics.append(Finding(
            "launch.yaml-cfg", "warning",
            f"with {flag.spelling} the front end ignores the command line's other flags: {', '.join(ignored)}",
            fix="put these settings in the YAML file", where=where))
    if data is None:
        unknown_file(config, str(flag.value), why, flag.line, where, env_keys=())
        return
    flat = {k: v for k, v in data.items() if not isinstance(v, dict)}
    for section in rule.get("sections", ()):
        if isinstance(data.get(section), dict):
            flat.update(data[section])
    for key, value in flat.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value)
        shown = "None" if value is None else value
        config.flags[str(key)] = Flag(str(key), shown, flag.line, f"{key} (from {flag.value})")
    config.diagnostics.append(Finding(
        "launch.config-file", "info", f"read {found} ({flag.spelling}): {len(flat)} setting(s)",
        where=where))


def load_file(name: str, launch_path: str, workdir: str | None,
              copies: dict[str, str] | None = None) -> tuple[str, dict]:
    """(the file found, its mapping). Relative names are looked for from the launch script's
    directory up (ms-swift's examples run from the repository root): the directory the script
    runs in is not known. Where a `cd` or a runner's option moved the command (`workdir`,
    config.workdir), only from there: under the same directories for a relative one; not at all
    where it is not known (another file of that name elsewhere is not the one opened). A file in
    a new copy of a checkout (`copies`, bash.checkout_copy) is read from that checkout."""
    found = find_script(launch_path, name) if workdir == "" or Path(name).is_absolute() else _moved(
        name, launch_path, workdir, copies or {})
    if found is None:
        raise Unreadable(f"not found in {Path(launch_path).resolve().parent} or a directory above it")
    try:
        text = read_bounded(str(found), "not a regular file")[1]
    except OSError as exc:
        raise Unreadable(f"{found}: {exc}") from None
    if found.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise Unreadable(f"{found} is not JSON: {exc}") from None
    else:
        data = load_yaml(text, found)
    if not isinstance(data, dict):
        raise Unreadable(f"{found} holds no mapping of settings")
    return str(found), data


def _moved(name: str, launch_path: str, workdir: str | None, copies: dict[str, str]) -> Path:
    """`name` opened in `workdir` (a relative one from the launch script's directory up, as an
    unmoved file is); Unreadable where `workdir` is not known statically. In a new copy of a
    checkout, the checkout's file; one whose path leaves the copy (`../x`) is not known."""
    if workdir is None:
        raise Unreadable("the directory the command runs in is not known statically (a `cd` or a "
                         "runner's working-directory option before it)")
    if Path(workdir).is_absolute() and in_copy(workdir, copies) is not None:
        opened = os.path.normpath(os.path.join(workdir, name))
        inside = in_copy(opened, copies)
        if inside is None:
            raise Unreadable(f"{opened} lies outside the copy of the checkout the command runs in, "
                             "whose other files are not known statically")
        if not Path(inside).is_file():
            raise Unreadable(f"not found in the checkout copied to {workdir}, where the command runs")
        return Path(inside)
    here = Path(launch_path).resolve().parent
    bases = [Path(workdir)] if Path(workdir).is_absolute() else [d / workdir for d in [here, *here.parents]]
    found = next((b / name for b in bases if (b / name).is_file()), None)
    if found is None:
        raise Unreadable(f"not found in {bases[0]}, where the command runs"
                         + ("" if Path(workdir).is_absolute() else ", or in that directory under one above"))
    return found


def load_yaml(text: str, path: Path) -> Any:
    """`text` of the file `path` as YAML (safe_load); Unreadable naming the file where it is not."""
    try:
        import yaml  # type: ignore[import-untyped]  # noqa: PLC0415 - only where a YAML file is read
    except ImportError:
        raise Unreadable("PyYAML is not installed (pip install pyyaml)") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise Unreadable(f"{path} is not YAML: {str(exc).splitlines()[0]}") from None


def surely_missing(config: LaunchConfig, name: str, option: str, loaded: str | None, path: str) -> None:
    """A relative config file the entry loads before any worker starts (`loaded`: the rules'
    `file_loaded`, how it stops the run) that the checkout surely lacks from every directory the
    run may start in (those from which its relative entry opens: bash/absent.py) is a certain
    stop; anything less certain stays unknown (unknown_file). After a `cd` (config.launch_dir
    None) the run may start outside the checkout, in a tree that holds the file: not certain."""
    absent = (absent_from_launch_dirs(name, config.script, path) if isinstance(config.script, str) and loaded
              and config.launch_dir is not None and config.workdir == "" else None)
    if absent is None:
        return
    missing, _ = absent
    config.diagnostics.append(Finding(
        "launch.config-file-missing", "error",
        f"{option} {name} (line {config.command_line}) is {missing}, which the checkout does not hold "
        f"wherever {config.script} runs from: {loaded}",
        fix=f"give {option} the path of a file the checkout holds, relative to where {config.script} is run",
        where=f"{path}:{config.command_line}", detail=dict(STARTUP)))


def unknown_file(config: LaunchConfig, name: str, why: str, line: int, where: str,
             env_keys: tuple[Any, ...], keys: list[str] | None = None) -> None:
    """Every setting the rules read from flags (`keys`, else `unread_keys`), not given on the
    command line, is unknown."""
    unknown = Symbolic(f"set by {name}, which cannot be read")
    keys = keys if keys is not None else unread_keys(config)
    for key in keys:
        if key not in config.flags:
            config.flags[key] = Flag(key, unknown, line, f"--{key} ({name}?)")
    for key in env_keys:
        if key and (key not in config.env or config.env[key].how == "assign"):
            config.env[key] = EnvVar(key, unknown, line, "inline")
    config.diagnostics.append(Finding(
        "launch.config-file-unread", "warning",
        f"{name} cannot be read ({why}): the settings it gives are unknown, not defaults",
        fix="audit the script where the file is (relative paths are looked for from the script's "
            "directory up), or give each setting with --set KEY=VALUE", where=where))


def unread_keys(config: LaunchConfig) -> list[str]:
    """What a file the run reads but this audit cannot may set: its launcher's front end's flag
    keys, else its reader's rules file's, else every front end's; never none, which would leave
    megatron-core's defaults standing for a file that may set any of them."""
    return flag_keys(config.launcher) or flag_keys(None, only=config.style) or flag_keys(None)


def flag_keys(launcher: str | None, only: str | None = None) -> list[str]:
    """The settings (and spellings) the rules read from the flags of this launcher's front end
    (None: of every front end; `only`: of that rules file's), in any release: which release the
    file was written for is not known either."""
    keys: list[str] = []
    for name in files.names():
        if only is not None and name != only:
            continue
        data = files.load(name).data
        stages = {s["name"] for s in data.get("stage", []) if s.get("flags")
                  and (launcher is None or launched_by(launcher, s.get("launchers", ["*"])))}
        for arg in data.get("arg", []):
            if arg.get("stage") in stages:
                keys += [k for k in [arg["key"], *arg.get("aliases", [])] if k not in keys]
    return keys
