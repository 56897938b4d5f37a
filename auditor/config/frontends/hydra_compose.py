"""Python entries that compose a Hydra config (`python examples/start_rlvr_pipeline.py
--config_path DIR --config_name NAME`, ROLL): the settings are the composed YAML's, and each
role the rules name (`[[hydra_compose]] role_key/role_values`: ROLL's megatron_train and
megatron_infer strategies) is a configuration of its own, judged as a script's several training
commands are (`config.commands`, `config.case`; analysis/commandcases.py). A role's settings
(`settings_key`) are its flags; its device count (`devices_key`) its world size. A role the
entry's pipeline class never builds (`builds`: frontends/built_roles.py) is no configuration:
a rollout pipeline's yaml may name a trainer it does not run. A copy of the
entry that composes its config with its own `@hydra.main` (config/entry_copy.py) is read on the
decorator's config, its `a.b=c` words applied to it as Hydra overrides (before its `${...}` are
resolved, as Hydra does)."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from pathlib import Path
from typing import Any

from auditor.bash.absent import checkout_root
from auditor.bash.values import Field, Symbolic
from auditor.config import located
from auditor.config.configfiles import load_yaml, unknown_file
from auditor.config.entry_absent import unread_before
from auditor.config.entry_copy import HydraMain, hydra_copy
from auditor.config.frontends.built_roles import built_roles
from auditor.config.flags import SCRIPT_ARGUMENTS, STARTUP, unresolved
from auditor.config.frontend_parser import find_script
from auditor.config.frontends.reader import Reader
from auditor.config.hydra_compose import MissingConfig, Unreadable, Unresolved, at, compose, device_count
from auditor.config.model import Flag, LaunchConfig
from auditor.config.overrides import override, typed
from auditor.findings import Finding
from auditor.rulebook import files
from auditor.rulebook.launchers import Spelling


class HydraComposeReader(Reader):
    style = "hydra-compose"
    cases = True  # several configurations (roles) per command: `config.case` picks one

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        rule = _rule(config.launcher)
        where = f"{path}:{config.command_line}"
        script = config.script if isinstance(config.script, str) else None
        main = hydra_copy(launcher, script, path)  # a @hydra.main copy: its decorator names the config
        config_path, name = _options(config, args, rule, main, path)
        entry = find_script(path, script) if script else None
        # a copy's `a.b=c` words are Hydra overrides of its config; `$@`, a word not known
        # statically, a group override (`a/b=c`, another file), an argparse positional: unknown
        overrides = [override(w) if main is not None else None for w in config.positionals]
        if any(o is None or not isinstance(o[1], str | None) or "/" in o[0] or "@" in o[0] for o in overrides):
            unknown_file(config, f"the config of {script or 'the entry script'}",
                         f"its entry is also given {_words(config.positionals)}, which this audit does not "
                         "apply to the composed config", config.command_line, where, env_keys=())
            return
        if entry is None or not isinstance(config_path, str) or not isinstance(name, str):
            what = (f"{config_path}/{name}" if entry is not None
                    else f"the config of {script or 'the entry script'}")
            why = (f"the entry script {script or config.script} is not found from {Path(path).parent}"
                   if entry is None else "its --config_path or --config_name is not known statically")
            unknown_file(config, what, why, config.command_line, where, env_keys=())
            return
        config_dir = entry.parent / config_path
        try:  # Hydra's `a.b=c`, in order, before the config's `${...}` are resolved
            composed = compose(config_dir, name.removesuffix(".yaml"), root=checkout_root(str(entry)),
                               overrides=[(k, None if v is None else typed(str(v)))
                                          for k, v in (o for o in overrides if o is not None)])
        except Unreadable as exc:
            if isinstance(exc, MissingConfig) and "://" not in config_path:  # pkg://: a package's, not read
                missing_default(config, exc, config_dir / f"{name.removesuffix('.yaml')}.yaml", entry, where,
                                 [o[0] for o in overrides if o is not None])
            unknown_file(config, f"{config_dir}/{name}.yaml", str(exc), config.command_line, where, env_keys=())
            return
        roles = _roles(composed.data, rule)
        shown = composed.files[0]
        built = built_roles(entry, rule["builds"]) if rule.get("builds") else None
        if built is not None and built.names_keys_of(composed.data):
            unbuilt = [f"{role} ({at(value, rule['role_key'])})" for role, value in roles if not built.builds(role)]
            roles = [(role, value) for role, value in roles if built.builds(role)]
            if unbuilt and not roles:
                config.diagnostics.append(Finding(
                    "launch.not-pipeline", "info",
                    f"no role of {shown} that the pipeline builds runs a strategy that pipelines: "
                    f"{', '.join(built.classes)} builds workers for {', '.join(sorted(built.roles))} only, "
                    f"never for {', '.join(unbuilt)}: no training, no Megatron pipeline P2P",
                    where=where, detail={"command": config.launcher}))
                return
        unknown = next((f"{role}.{key} is {found.text} ({found.why})" for role, value in roles
                        for key in (rule["role_key"], rule["settings_key"])
                        for found in [at(value, key)] if isinstance(found, Unresolved)), None)
        if unknown is not None:  # a role that may pipeline, or settings, not known: never dropped
            unknown_file(config, str(shown), unknown, config.command_line, where, env_keys=())
            return
        roles = [(role, value) for role, value in roles if at(value, rule["role_key"]) in rule["role_values"]]
        if not roles:
            config.diagnostics.append(Finding(
                "launch.not-pipeline", "info",
                f"no role of {shown} runs a strategy that pipelines ({', '.join(rule['role_values'])}): "
                "no Megatron pipeline P2P", where=where, detail={"command": config.launcher}))
            return
        one_stage = _inferring_in_one_stage(composed.data, roles, rule)
        if one_stage is not None:
            config.diagnostics.append(Finding(
                "launch.not-pipeline", "info", f"no role of {shown} {one_stage}",
                where=where, detail={"command": config.launcher}))
            return
        config.commands = len(roles)
        if config.case >= len(roles):
            return  # launch._build says there is no such configuration
        role, value = roles[config.case]
        config.case_name = role
        settings = at(value, rule["settings_key"]) or {}
        for key, setting in (settings.items() if isinstance(settings, dict) else ()):
            spelled = f"{role}.{rule['settings_key']}.{key} (from {shown.name})"
            config.flags[str(key)] = Flag(str(key), yaml_text(setting), config.command_line, spelled)
        devices = device_count(at(value, rule["devices_key"])) if rule.get("devices_key") else None
        if devices is not None:
            key = rule["devices_key"]
            config.flags[key] = Flag(key, yaml_text(devices), config.command_line, f"{role}.{key}")
        config.diagnostics.append(Finding(
            "launch.config-file", "info",
            f"read {shown} (Hydra compose of {len(composed.files)} file(s)): role {role} "
            f"({at(value, rule['role_key'])}), one of {len(roles)} judged "
            f"({', '.join(k for k, _ in roles)})", where=where,
            detail={"files": [str(f) for f in composed.files], "role": role}))


def missing_default(config: LaunchConfig, exc: MissingConfig, primary: Path, entry: Path, where: str,
                     keys: list[str]) -> None:
    """A start-up failure where Hydra surely finds no file for the primary config or a defaults
    entry: nothing but the config directory supplies configs, as the primary states no
    `hydra.searchpath` (a missing primary states none), the command line sets none, and no
    Python file of the checkout registers a ConfigStore node or a search-path plugin (which may
    hold it under that name); a defaults entry also needs no command-line override `keys` naming
    its group (`strategy=zero3` picks another option, read here as a value). The file must lie
    inside the checkout (a folder outside it, `../../shared/cfgs` or /mnt, is not this tree's),
    no earlier command may write it (one naming it, `_names`, or one running code not read:
    `bash prep.sh`, entry_absent.unread_before), and its name has no `.yml` (Hydra 1.1 loads
    `x.yml` as written, 1.2 looks for `x.yml.yaml`: which applies is the run's version_base);
    otherwise it stays unknown."""
    given = {k.lstrip("+~") for k in keys}
    if "hydra.searchpath" in given or (not exc.primary and exc.name.split("/")[0] in {k.split(".")[0] for k in given}):
        return
    root = checkout_root(str(entry))
    missing = (primary.parent / f"{exc.name}.yaml").resolve()
    if root is None or not missing.is_relative_to(root.resolve()) or exc.name.endswith(".yml") \
            or _names(config, missing):
        return
    line = unread_before(config, config.opaque, made=missing)
    if line is not None:  # `bash prep.sh`, `cp /shared/*.yaml $(dirname $0)/` may write it unnamed
        lines = config.text.splitlines()
        said = f"line {line}: `{lines[line - 1].strip()}`" if line <= len(lines) else f"line {line}"
        named = located.shown(missing, root.resolve())  # as the cause names it: the headline's one line
        config.diagnostics.append(Finding(
            "launch.config-may-be-written", "info",
            f"{exc}, unless a command before the launch writes it: {said}",
            fix=f"check that command, or audit after it has run: {named}", where=where,
            # the one step that decides the run (no file: it does not start; one: its settings)
            detail={"undecided": f"whether {named} exists when the run starts ({said})",
                    "decide": "audit after that command has run, or check what it writes"}))
        return
    data: Any = {}
    if not exc.primary:
        try:
            data = load_yaml(primary.read_text(encoding="utf-8"), primary)
        except (OSError, UnicodeDecodeError, Unreadable):
            return
    if not isinstance(data, dict) or at(data, "hydra.searchpath") is not None or _registers_configs(root):
        return
    fix = ("name a config the checkout holds with --config_name, or restore the file" if exc.primary
           else "name a config the checkout holds in that defaults list, or restore the file")
    config.diagnostics.append(Finding(
        "launch.config-file-missing", "error",
        f"{exc}: Hydra stops the run before any worker starts. Its compose raises "
        "MissingConfigException for the file",
        fix=fix, where=where, detail=dict(STARTUP)))


def _names(config: LaunchConfig, missing: Path) -> bool:
    """Whether a command the script runs before the training command may write the missing config
    file by naming it: any that names it, its stem or its folder (`cp cfg.yaml ex/gen.yaml`, `python gen.py >
    ex/gen.yaml`, `NAME=gen` then `envsubst > ex/$NAME.yaml`, a heredoc, `wget -O`), read from the
    script's text before the entry script's word, as no walk models every program's writes. A
    comment line writes nothing (verl@b178a3cd56 dapo_30b_a3b_base_math_fsdp.sh:14 mentions a
    `config.json`)."""
    lines = config.text.splitlines()
    before = [t for t in lines[:max(config.command_line - 1, 0)] if not t.lstrip().startswith("#")]
    if 0 < config.command_line <= len(lines):
        line = lines[config.command_line - 1]
        script = str(config.script) if config.script else ""
        before.append(line[:line.find(script)] if script and script in line else "")
    names = {missing.stem, missing.parent.name} - {""}
    return any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", "\n".join(before)) for n in names)


@functools.cache
def _registers_configs(root: Path) -> bool:
    """Whether a Python file of the checkout names Hydra's ConfigStore or its plugins' package
    (hydra_plugins): configs that are no file of a config directory."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if name.endswith(".py"):
                try:
                    text = Path(folder, name).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    return True  # unread: it may
                if "ConfigStore" in text or "hydra_plugins" in text:
                    return True
    return False


def _roles(data: dict[str, Any], rule: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The roles whose strategy the rules name, or is not known statically (it may be one):
    top-level keys (actor_train, reference), and the entries of a top-level mapping of workers
    (ROLL's `rewards: {math_rule: {...}}`)."""
    def may_pipeline(value: dict[str, Any]) -> bool:
        named = at(value, rule["role_key"])
        return named in rule["role_values"] or isinstance(named, Unresolved)

    out: list[tuple[str, dict[str, Any]]] = []
    for key, value in data.items():
        if not isinstance(value, dict):
            continue
        if may_pipeline(value):
            out.append((str(key), value))
            continue
        out += [(f"{key}.{k}", v) for k, v in value.items() if isinstance(v, dict) and may_pipeline(v)]
    return out


def _inferring_in_one_stage(data: dict[str, Any], roles: list[tuple[str, dict[str, Any]]],
                            rule: dict[str, Any]) -> str | None:
    """What the run is where no role trains with a strategy that pipelines (`train_values`: ROLL's
    megatron_train) and each role that runs one only infers in one stage (its settings state
    `stages_key` 1: a forward pass in one stage sends nothing): what trains instead, said from
    the roles' strategies; None otherwise (a stage count not stated is the checkpoint's)."""
    trains, stages = rule.get("train_values"), rule.get("stages_key")
    if trains is None or stages is None:
        return None
    if any(at(value, rule["role_key"]) in trains for _, value in roles):
        return None
    settings = [at(value, rule["settings_key"]) for _, value in roles]
    if not all(isinstance(s, dict) and type(s.get(stages)) is int and s[stages] == 1 for s in settings):
        return None
    others = [f"{role} ({name})" for role, value in _strategies(data, rule)
              if (name := at(value, rule["role_key"])) not in rule["role_values"]]
    inferring = ", ".join(f"{role} ({at(value, rule['role_key'])})" for role, value in roles)
    return (f"trains with a strategy that pipelines ({', '.join(trains)}): "
            f"{', '.join(others) or 'its other roles'} run none; those that run one only infer, each at "
            f"{stages} 1 ({inferring}): a forward pass in one stage, no pipeline P2P")


def _strategies(data: dict[str, Any], rule: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every role that names a strategy, where `_roles` finds them."""
    named = [(str(key), value) for key, value in data.items()
             if isinstance(value, dict) and isinstance(at(value, rule["role_key"]), str)]
    return named + [(f"{key}.{k}", v) for key, value in data.items() if isinstance(value, dict)
                    and not isinstance(at(value, rule["role_key"]), str)
                    for k, v in value.items() if isinstance(v, dict) and isinstance(at(v, rule["role_key"]), str)]


def _words(words: list[Any]) -> str:
    return ", ".join(f"`{w}`" for w in words[:3]) + (" ..." if len(words) > 3 else "")


def _rule(launcher: str) -> dict[str, Any]:
    """The [[hydra_compose]] entry of this launch (one rules file claims each launcher)."""
    return next(e for name in files.names() for e in files.load(name).data.get("hydra_compose", [])
                if any(fnmatch.fnmatchcase(launcher, p) for p in e["launchers"]))


def _options(config: LaunchConfig, args: list[Field], rule: dict[str, Any],
             main: HydraMain | None, path: str) -> tuple[Any, Any]:
    """(config path, config name) the entry's own options give, argparse-style (`--opt VALUE`,
    `--opt=VALUE`); else a @hydra.main copy's decorator's, else the path's default where the rules
    state one. Other words are positionals, but the launch script's own arguments (`"$@"`), which
    the script run as written does not have."""
    given: dict[str, Any] = {}
    k = 0
    while k < len(args):
        word = args[k].value
        head = str(word).partition("=")
        option = head[0] if isinstance(word, str) else ""
        for kind in ("path_options", "name_options"):
            if option and option in rule[kind]:
                if head[1]:
                    given[kind] = head[2]
                elif k + 1 < len(args):
                    k += 1
                    given[kind] = args[k].value
                config.launcher_flags[option.lstrip("-")] = Flag(option.lstrip("-"), given[kind],
                                                                 args[k].line, option)
                break
        else:
            if str(word) in SCRIPT_ARGUMENTS:  # `"$@"`: the script run as written has none (flags.unresolved)
                unresolved(config, args[k], path, "overrides")
            else:
                config.positionals.append(word)
        k += 1
    if main is not None:
        return given.get("path_options", main.config_path), given.get("name_options", main.config_name)
    return given.get("path_options", rule.get("path_default")), given.get("name_options")


def yaml_text(value: Any) -> Any:
    """A YAML value as the flag text the rules' types read; an unresolved one stays unknown."""
    if isinstance(value, Unresolved):
        return Symbolic(value.text)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "None" if value is None else str(value)
