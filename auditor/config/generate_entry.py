"""What a Megatron-Bridge generate entry decides beyond the sizes it writes.

Its own argparse is the run's front end (rules/megatron-bridge.toml stage bridge-entry-args):
Megatron-LM's argument stages never run for it, and what they would decide stays unknown
(config/derive.py), except the settings rules/megatron-bridge.toml `[entry_defaults]` names,
whose megatron-core default runs unless an `[[entry_setter]]` applies to the run: a flag of the
entry that writes them (a pipeline layout, which implies virtual stages), the Megatron checkpoint
the model is then loaded from (its run_config.yaml), or a model provider that sets them
(Sarvam-MoE's layout). A setter's `provider_keys` are those the entry's own provider decides
(the virtual pipeline size that picks the schedule): the checkpoint reaches them only where the
entry may write one of `provider_writes` on it, or may call the setter's `loader` before its
provider's `provider_init` sets the parallel state (config/entry_assign.py `may_write`). Where the
launch line gives none of the setter's flags, the call that loads the checkpoint decides: a
`loader` call whose path may not be None (`load_megatron_model(args.megatron_path)`, whatever the
option is called: config/entry_assign.py `loads_checkpoint`) applies the setter too, and a call of
its `config_loaders` (`load_model_config`) gives the checkpoint's own model provider, whose
`provider_keys` are then the checkpoint's whatever the entry writes. Those are
unknown until --set gives them, as config/checkpoint_args.py
leaves Megatron-LM's checkpoint sizes, except where the script itself wrote that checkpoint
before from the same HF model (the setter's `written_by`: `convert.sh import`), which holds the
HF model provider's settings: those of the HF branch.
"""

from __future__ import annotations

from fnmatch import fnmatch

from auditor import rulebook
from auditor.bash.values import Scalar, Symbolic
from auditor.config.entry_assign import loads_checkpoint, may_write
from auditor.config.model import LaunchConfig


def entry_defaults(launch: LaunchConfig) -> frozenset[str]:
    """The settings whose megatron-core default runs for this entry where no setter applies;
    empty for another front end's launch."""
    data = rulebook.load("megatron-bridge").data.get("entry_defaults")
    return frozenset(data["keys"]) if data and launch.style in data["styles"] else frozenset()


def entry_set(launch: LaunchConfig) -> dict[str, tuple[str, int]]:
    """Those settings something else sets in this run: key -> (why, line of the flag)."""
    if not entry_defaults(launch):
        return {}
    out: dict[str, tuple[str, int]] = {}
    for setter in rulebook.load("megatron-bridge").data.get("entry_setter", []):
        loads: tuple[str, str] | None = None
        flag = next((launch.flags[f] for f in setter["flags"] if f in launch.flags), None)
        if flag is not None and _names(flag.value, setter.get("values")) \
                and not _written(launch, flag.value, setter.get("written_by")):
            shown = flag.value.text if isinstance(flag.value, Symbolic) else flag.value
            said, line = f"{flag.spelling} {shown} (line {flag.line})", flag.line
        elif flag is None and setter.get("loader") and (loads := loads_checkpoint(
                launch, [setter["loader"], *setter.get("config_loaders", [])], setter["loader_params"],
                setter["flags"])):
            said, line = loads[0], launch.command_line  # a checkpoint loaded under an option of another name
        else:
            continue
        why = f"{said}: {setter['why']} ({setter['source']})"
        decide = f"; read it from {setter['decide']}" if setter.get("decide") else ""
        for key in setter["keys"]:
            out.setdefault(key, (why + decide, line))
        written: str | None = None
        if loads is not None and loads[1] in setter.get("config_loaders", []):
            written = f"{loads[1]} gives the model provider itself"
        elif setter.get("provider_keys"):
            written = may_write(launch, setter["provider_writes"], setter["loader"], setter["provider_init"])
        for key in setter.get("provider_keys", []) if written else []:
            out.setdefault(key, (f"{why}, and the entry may set it on its provider from there ({written})"
                                 f"{decide}", line))
    return out


def _names(value: Scalar, patterns: list[str] | None) -> bool:
    """Whether the flag's value may be one the setter applies to: any value where it names no
    patterns; else a match, or a value whose last path part is not known statically (a model
    directory `${WORKSPACE}/models/GLM-4.5V` is named by its literal last part)."""
    if patterns is None:
        return True
    text = value.text if isinstance(value, Symbolic) else value
    if not isinstance(text, str) or "$" in text.rstrip("/").rpartition("/")[2]:
        return True
    return any(fnmatch(text.lower(), p) for p in patterns)


def _written(launch: LaunchConfig, loaded: Scalar, writer: dict[str, str] | None) -> bool:
    """Whether the checkpoint `loaded` names is one an unconditional earlier command of the script
    wrote (`writer`: its program and subcommand), from the model the entry names too (`model`
    against the entry's `model_flag`), with no size that changes what it writes (`sizes` absent or
    1): its output directory (`path`) is `loaded` itself or the `child` it writes, as written."""
    if writer is None:
        return False
    model = launch.flags.get(writer["model_flag"])
    want = _text(loaded).rstrip("/")
    for command in reversed(launch.earlier):
        if command.program != writer["program"] or command.subcommand != writer["subcommand"]:
            continue
        options = _options(command.words)
        path = _text(options.get(writer["path"])).rstrip("/")
        if not path or want not in (path, f"{path}/{writer['child']}"):
            continue
        return (not command.conditional and model is not None and _text(model.value) != ""
                and _text(options.get(writer["model"])) == _text(model.value)
                and _text(options.get(writer["sizes"], "1")) == "1")
    return False


def _options(words: tuple[Scalar, ...]) -> dict[str, Scalar]:
    """`--name value` and `--name=value` words, by `--name` (the last giving wins)."""
    out: dict[str, Scalar] = {}
    for k, word in enumerate(words):
        text = _text(word)
        name, eq, value = text.partition("=")
        if not name.startswith("--"):
            continue
        out[name] = value if eq else (words[k + 1] if k + 1 < len(words) else None)
    return out


def _text(value: Scalar) -> str:
    """A word as written: a value not known statically by its text (`${WORKSPACE}/models/M`)."""
    return value.text if isinstance(value, Symbolic) else value if isinstance(value, str) else ""
