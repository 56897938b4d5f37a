"""Which trainer a Hydra-configured RL run uses (verl's `actor_rollout_ref.actor.strategy`): the
config `--config-path`/`--config-name` name (or the main's own), composed with its defaults and
`hydra.searchpath` (config/hydra_compose.py), with the command line's overrides applied before its
`${...}` are resolved, as Hydra does (`worker_strategy=megatron` reaches
`strategy: ${worker_strategy}`; one not known statically leaves what interpolates it unknown). A
strategy the rules' `[hydra_strategy] not_pipeline` names (fsdp, fsdp2) trains no pipeline: a
`launch.not-pipeline` note, which launch.refuse_not_pipeline turns into NOT A PIPELINE RUN. Any
other strategy, or one not known statically (the config not found, a value not known, an override
that may set one unseen: a group, a node above the key, a key not known), leaves the
run read as the framework's Megatron run, with its own unknowns: never NOT A PIPELINE RUN by guess.
The rule holds on the releases its `versions` names and on a checkout whose own code holds its
`code` (rulebook.checkout); a run on another release, or on one not stated, is undecided
(unverified_release), never NOT A PIPELINE RUN by a rule read beyond its range.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from auditor.bash.values import Field, Scalar, Symbolic, concat, segments
from auditor.bash.absent import checkout_root
from auditor.config.configfiles import flag_keys, unknown_file
from auditor.config.entry_copy import HydraMain
from auditor.config.frontends.hydra_compose import missing_default, yaml_text
from auditor.config.hydra_compose import MissingConfig, Unreadable, Unresolved, at, compose
from auditor.config.model import Flag, LaunchConfig
from auditor.config.overrides import override, typed
from auditor.findings import Finding
from auditor.rulebook import files
from auditor.rulebook.checkout import confirmed


def judge_strategy(config: LaunchConfig, args: list[Field], path: str, main: HydraMain | None = None) -> None:
    """Say when every role's strategy, as composed and overridden, is one that trains no pipeline;
    `main`: a copy of the framework's main, whose own @hydra.main names the config."""
    rule = _rule()
    if rule is None or _may_change_strategy(args, rule):
        return
    if config.unknown_words and not set(rule["keys"]) <= config.unknown_words[-1].after:
        return  # a word not known statically may set the strategy (flags.open_settings' rule)
    try:
        composed = _composed(args, path, rule) if main is None else _copy_composed(args, rule, main)
    except Unreadable:  # read_copy_config says what a missing config does
        return
    saids: list[str] = []
    values: list[str] = []
    for key in rule["keys"]:
        given = config.flags.get(key)
        if given is not None:
            value, said = given.value, f"{key}={given.value} (line {given.line})"
        elif composed is not None:
            value = at(composed[0], key)
            value = None if isinstance(value, Unresolved) else value
            said = f"{key}: {value}"
        else:
            return
        if not isinstance(value, str) or value not in rule["not_pipeline"]:
            return  # a role on Megatron, or one not known statically: the Megatron reading holds
        saids.append(said)
        values.append(value)
    where_read = "" if composed is None else f" (composed from {', '.join(f.name for f in composed[1][:3])}" + (
        ", ...)" if len(composed[1]) > 3 else ")")
    config.diagnostics.append(Finding(
        "launch.not-pipeline", "info", f"{rule['not_pipeline'][values[0]]}: {', '.join(saids)}{where_read}",
        where=f"{path}:{config.command_line}", detail={"command": config.launcher, "hydra_strategy": True}))


def unverified_release(config: LaunchConfig, note: Finding,
                       stated: Mapping[str, str]) -> tuple[str, str] | None:
    """(what, the step that decides it) where `note` is judge_strategy's and the release the run
    uses (`stated`, --target's, else the script's or its checkout's) is not one its rule is
    verified on; None where it is, or where the note is another reader's."""
    if not note.detail.get("hydra_strategy"):
        return None
    rules = next(files.load(n) for n in files.names() if "hydra_strategy" in files.load(n).data)
    rule, framework = rules.data["hydra_strategy"], rules.data["framework"]
    name = framework["distribution"]
    version = stated.get(name) or config.pins.get(name)
    root = config.checkouts.get(framework["name"])
    if files.version_in(version, rule["versions"]) or (version is not None and root is not None
                                                        and confirmed(rule, root)):
        return None
    which = (f"{name} {version} is beyond" if version is not None
             else f"which {name} release the run uses is not stated, and may be beyond")
    return (f"{which} the releases the strategy reading is verified on ({name} {rule['versions']}, or a "
            f"checkout holding {rule['source']}'s strategy test), where: {note.message}",
            f"--target {name}==VERSION, the release the cluster runs")


def read_copy_config(config: LaunchConfig, args: list[Field], path: str, main: HydraMain) -> None:
    """A copy of the framework's main runs on its own config: each setting the framework's rules
    read (their flag keys) that the command line does not give is the composed config's; where
    that config is not composed, every one is unknown (configfiles.unknown_file), not the
    release's default; where the config it names is surely not in the checkout, Hydra stops the
    run (frontends.hydra_compose.missing_default: verl@b178a3cd56
    verl/experimental/fully_async_policy/shell/dapo_30b_a3b_base_math_fsdp.sh:101 names
    `fully_async_dapo_trainer.yaml`, which no folder holds)."""
    rule = _rule()
    where = f"{path}:{config.command_line}"
    try:
        composed = _copy_composed(args, rule, main) if rule is not None else None
    except MissingConfig as exc:
        assert rule is not None
        config_dir = main.entry.parent / str(_option(args, rule["path_options"], main.config_path))
        primary = config_dir / f"{str(_option(args, rule['name_options'], main.config_name)).removesuffix('.yaml')}.yaml"
        missing_default(config, exc, primary, main.entry, where, [k for k, _ in _overrides(args, rule)])
        composed = None
    except Unreadable:
        composed = None
    if composed is None:
        unknown_file(config, f"the config of {main.entry.name} ({main.shown()})",
                     "it is not composed here: a name, the working directory or a file is not known statically",
                     config.command_line, where, env_keys=())
        return
    data, read = composed
    for key in flag_keys(config.launcher):
        value = at(data, key)
        if key not in config.flags and value is not None and not isinstance(value, dict | list):
            config.flags[key] = Flag(key, yaml_text(value), config.command_line, f"{key} (from {read[0].name})")


def _may_change_strategy(args: list[Field], rule: dict[str, Any]) -> bool:
    """Whether an override could set a strategy this reading does not see: one whose key is not
    known statically (`${KEY}=x`), a Hydra group override (`actor@a.b=x`, `a/b=x`: another
    defaults file), or one of a node above a strategy key (`a.actor=...`). A word wholly unknown
    (`${EXTRA}`) is one of config.unknown_words, judged by judge_strategy."""
    skip = False
    for f in args:
        if skip:
            skip = False
            continue
        pieces = segments(f.value)
        head, unknown = pieces[0]
        if unknown:
            if any("=" in text for text, _ in pieces[1:]):
                return True
            continue
        if "=" not in head:
            if len(pieces) > 1 and any("=" in text for text, _ in pieces[1:]):
                return True
            skip = head in rule["path_options"] + rule["name_options"]
            continue
        key = head.partition("=")[0]
        if key in rule["path_options"] + rule["name_options"]:
            continue
        key = key.lstrip("+~")
        if "@" in key or "/" in key or any(k.startswith(f"{key}.") for k in rule["keys"]):
            return True
    return False


def _composed(args: list[Field], path: str,
              rule: dict[str, Any]) -> tuple[dict[str, Any], list[Path]] | None:
    """(the composed config, the files read) of the command; None where the checkout, a file or
    an option is not known statically."""
    root = next((d for d in Path(path).resolve().parents if (d / rule["main"]).is_file()), None)
    if root is None:
        return None
    main_dir = (root / rule["main"]).parent
    config_path = _option(args, rule["path_options"], rule["config_path"])
    name = _option(args, rule["name_options"], rule["config_name"])
    if not isinstance(name, str) or config_path is None:
        return None
    if not isinstance(config_path, str):
        # `$X/examples/x/config`: the known tail, looked for in the checkout the script is in.
        tail = segments(config_path)[-1] if isinstance(config_path, Symbolic) else ("", True)
        config_dir = _in_root(tail[0], root) if not tail[1] else None
    elif not Path(config_path).is_absolute():
        config_dir = main_dir / config_path
    else:  # the authors' absolute path (`$(pwd)/...`): here, if not a folder here, the checkout's
        config_dir = Path(config_path) if Path(config_path).is_dir() else _in_root(config_path, root)
    if config_dir is None:
        return None
    name = name.removesuffix(".yaml")
    try:
        search = _searchpath(config_dir / f"{name}.yaml", root)
        composed = compose(config_dir, name, search, root, _overrides(args, rule))
    except Unreadable:
        return None
    return composed.data, composed.files


def _copy_composed(args: list[Field], rule: dict[str, Any],
                   main: HydraMain) -> tuple[dict[str, Any], list[Path]] | None:
    """(the composed config, the files read) of a copy of the main: its decorator's config unless
    the command line's `--config-path`/`--config-name` (Hydra's own) name another, a relative path
    relative to the copy; `file://` searchpaths relative to the working directory the command runs
    the copy from. None where a name or the working directory is not known statically; a file
    that cannot be read raises (Unreadable; MissingConfig where none holds the config)."""
    config_path = _option(args, rule["path_options"], main.config_path)
    name = _option(args, rule["name_options"], main.config_name)
    if not isinstance(config_path, str) or not isinstance(name, str) or main.cwd is None:
        return None
    root = checkout_root(str(main.entry))
    config_dir = main.entry.parent / config_path
    name = name.removesuffix(".yaml")
    composed = compose(config_dir, name, _searchpath(config_dir / f"{name}.yaml", main.cwd),
                       root, _overrides(args, rule))
    return composed.data, composed.files


def _overrides(args: list[Field], rule: dict[str, Any]) -> list[tuple[str, Any]]:
    """The command line's `a.b=c` words, in order, as compose applies them: a value not known
    statically is `Unresolved`, so whatever interpolates its key is unknown too, never the
    config's own value; `~a.b` deletes (None). Hydra's own options are none."""
    out: list[tuple[str, Any]] = []
    skip = False
    for f in args:
        given = None if skip else override(f.value)
        skip = isinstance(f.value, str) and f.value in rule["path_options"] + rule["name_options"]
        if given is None:
            continue
        key, value = given
        out.append((key, None if value is None else typed(value) if isinstance(value, str)
                    else Unresolved(str(value), f"`{key}` is given as {value}, not known statically")))
    return out


def _in_root(given: str, root: Path) -> Path | None:
    """The folder of the checkout at the longest tail of `given` (`/home/x/verl/examples/c` ->
    ROOT/examples/c); None where no tail of two parts or more is one."""
    parts = [p for p in Path(given).parts if p not in ("/", ".")]
    return next((root / Path(*parts[i:]) for i in range(len(parts) - 1) if (root / Path(*parts[i:])).is_dir()),
                None)


def _searchpath(primary: Path, root: Path) -> tuple[Path, ...]:
    """The primary file's `hydra.searchpath`: `file://DIR` relative to the working directory, the
    checkout's root, where `python -m` imports the package from; `pkg://a.b` that package's folder.
    A primary that is not there states none: compose says it is missing (MissingConfig)."""
    from auditor.config.configfiles import load_yaml

    try:
        data = load_yaml(primary.read_text(encoding="utf-8"), primary)
    except FileNotFoundError:
        return ()
    except (OSError, UnicodeDecodeError):
        raise Unreadable(f"{primary} cannot be read") from None
    paths = at(data, "hydra.searchpath") if isinstance(data, dict) else None
    out: list[Path] = []
    for entry in paths if isinstance(paths, list) else []:
        text = str(entry)
        if text.startswith("file://"):
            out.append(root / text.removeprefix("file://"))
        elif text.startswith("pkg://"):
            out.append(root / text.removeprefix("pkg://").replace(".", "/"))
    return tuple(out)


def _option(args: list[Field], options: list[str], default: str | None) -> Any:
    """The value of a Hydra option (`--opt=VALUE`, `--opt VALUE`), unknown pieces kept unknown;
    the main's default where none is given, the last one where several are."""
    found: Any = default
    for k, f in enumerate(args):
        pieces: list[Scalar] = [Symbolic(t) if unknown else t for t, unknown in segments(f.value)]
        head = pieces[0] if isinstance(pieces[0], str) else ""
        option, eq, rest = head.partition("=")
        if option not in options:
            continue
        if eq:
            found = concat([rest, *pieces[1:]])
        elif k + 1 < len(args):
            found = args[k + 1].value
    return found


def _rule() -> dict[str, Any] | None:
    for name in files.names():
        data = files.load(name).data
        if "hydra_strategy" in data:
            return dict(data["hydra_strategy"])
    return None
