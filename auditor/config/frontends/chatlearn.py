"""Python entries that load a YAML `--config-file` and apply `key=value` words to it, the train
backend deciding what trains (ChatLearn: `python chatlearn/entrypoint.py grpo --config-file
template/grpo_megatron.yaml models.policy_trainer.pipeline_model_parallel_size=1 ...`).

The file is opened from the launch directory (`config.launch_dir`), each word applied as
OmegaConf.update applies it (a dotted key set, missing levels made), then `${a.b}` resolved
(config/hydra_compose.py). The rules' `[dotlist_config]` say where the backend is and which
backend trains which roles: a backend the rules say trains no pipeline (fsdp) is NOT A PIPELINE
RUN; the Megatron backend's roles are each a configuration of their own (`config.case`), their
fields, nested ones included, the flags of Megatron-LM's front end (`[[role_default]]` where the
file gives none, its default read from the run's own checkout). Anything not known statically
stays unknown.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

from auditor.bash.values import Field, Symbolic
from auditor.config import model_facts
from auditor.config.configfiles import Unreadable, load_yaml, surely_missing, unknown_file
from auditor.config.flags import SCRIPT_ARGUMENTS, unresolved, wholly_unknown
from auditor.config.frontends import assign_place
from auditor.config.frontends.assign_place import Place
from auditor.config.frontends.hydra_compose import yaml_text
from auditor.config.frontends.reader import Reader
from auditor.config.hydra_compose import Unresolved, at, resolve
from auditor.config.model import Flag, LaunchConfig
from auditor.config.overrides import override
from auditor.findings import Finding
from auditor.rulebook import files
from auditor.rulebook.launchers import Spelling

_NULLS = ("null", "~", "None")


class DotlistConfigReader(Reader):
    style = "chatlearn"
    cases = True  # one configuration per Megatron role: `config.case` picks one

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        rule, defaults, model = _rules()
        where = f"{path}:{config.command_line}"
        words = [f.value for f in args]
        algorithm = words[0] if words else None
        if algorithm not in rule["algorithms"]:
            unknown_file(config, f"the config of {config.script}",
                         f"its algorithm {algorithm!r} is none of {', '.join(rule['algorithms'])}",
                         config.command_line, where, env_keys=())
            return
        name, updates, unseen = _options(words[1:], rule)
        unseen = _unknown_words(config, args[1:], updates, unseen, path)
        if unseen:
            unknown_file(config, f"the config of {config.script}",
                         f"{', '.join(repr(str(w)) for w in unseen)}: not statically a `key=value` override, "
                         "so may set its train backend or any role's settings", config.command_line, where,
                         env_keys=())
            return
        if not isinstance(name, str):
            why = ("no --config-file is given: the backend is the dataclass's MISSING" if name is None
                   else "its --config-file is not known statically")
            unknown_file(config, f"the config of {config.script}", why, config.command_line, where, env_keys=())
            return
        file = Path(name) if os.path.isabs(name) else (
            Path(config.launch_dir) / name if config.launch_dir is not None else None)
        try:
            if file is None:
                raise Unreadable("a relative path, and after a `cd` the launch directory is not known")
            data = load_yaml(_read(file), file)
            if not isinstance(data, dict):
                raise Unreadable(f"{file} holds no mapping")
        except Unreadable as exc:
            surely_missing(config, name, "--config-file", rule.get("file_loaded"), path)
            unknown_file(config, name, str(exc), config.command_line, where, env_keys=())
            return
        for key, value in updates:
            _update(data, key, value)
        tree = resolve(data)
        backend = at(tree, rule["backend_key"])
        if (config.unknown_words and rule["backend_key"] not in config.unknown_words[-1].after
                and backend in rule.get("not_pipeline", {})):  # no pipeline only if no word may say so
            backend = Unresolved(config.unknown_words[-1].text, "a word not known statically may set it")
        said = f"{rule['backend_key']}={yaml_text(backend)} ({file.name} and {len(updates)} override(s))"
        if isinstance(backend, str) and backend in rule.get("not_pipeline", {}):
            config.diagnostics.append(Finding(
                "launch.not-pipeline", "info", f"{rule['not_pipeline'][backend]}: {said}",
                where=where, detail={"command": config.launcher}))
            return
        if backend != rule["megatron_backend"]:
            unknown_file(config, name, f"its train backend {said} is not known statically" if not isinstance(
                backend, str) else f"its train backend {said} is none the rules know", config.command_line,
                where, env_keys=())
            return
        roles = rule["megatron_roles"]
        config.commands = len(roles)
        if config.case >= len(roles):
            return  # launch._build says there is no such configuration
        role = roles[config.case]
        config.case_name = role.rpartition(".")[2]
        for key, (value, where_read) in _role_defaults(defaults, config).items():
            config.flags[key] = Flag(key, value, config.command_line, f"{role}.{key} (ChatLearn's default, {where_read})")
        settings = at(tree, role)
        for dotted, value in _leaves(settings if isinstance(settings, dict) else {}):
            key = dotted.rpartition(".")[2]
            config.flags[key] = Flag(key, yaml_text(value), config.command_line, f"{role}.{dotted} (from {file.name})")
        for key, (value, why) in _from_model(model, tree, config).items():
            config.flags[key] = Flag(key, value, config.command_line, f"{role}.megatron_model_cfg.{key} ({why})")
        config.diagnostics.append(Finding(
            "launch.config-file", "info",
            f"read {file} with {len(updates)} override(s): {said}, role {config.case_name}, one of "
            f"{len(roles)} judged ({', '.join(r.rpartition('.')[2] for r in roles)})", where=where,
            detail={"files": [str(file)], "role": config.case_name}))


def _rules() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """The `[dotlist_config]`, `[[role_default]]` and the model tables (one rules file states them)."""
    for name in files.names():
        data = files.load(name).data
        if "dotlist_config" in data:
            model = {"config": data.get("model_config"), "settings": data.get("model_setting", [])}
            return data["dotlist_config"], list(data.get("role_default", [])), model
    raise LookupError("no rules file states [dotlist_config]")


def _from_model(model: dict[str, Any], tree: dict[str, Any], config: LaunchConfig) -> dict[str, tuple[Any, str]]:
    """What the entry writes over every Megatron role from the model's config.json (ChatLearn's
    update_cfg): each `[[model_setting]]` key from rules/models.toml's facts of the model its
    `[model_config] path_key` names (config/model_facts.py), the entry for the model's
    architecture over the general one; unknown, naming `--set KEY=N`, where no fact decides.
    A setting holds where the run's own checkout runs its `code` at the place the rule names
    (config/frontends/assign_place.py; pai-chatlearn 1.2.0 on PyPI has no Qwen3-Next branch);
    with no checkout found, only what every release the rules cover sets alike is known."""
    conf = model["config"]
    if conf is None:
        return {}
    path = at(tree, conf["path_key"])
    found = model_facts.find(path)
    shown = f"{conf['path_key']}={yaml_text(path)}"
    out: dict[str, tuple[Any, str]] = {}
    for key in dict.fromkeys(s["key"] for s in model["settings"]):
        entries = [s for s in model["settings"] if s["key"] == key]
        relpath = _relpath(entries[0])
        root = _checkout(config, relpath)
        module = _module(root / relpath) if root is not None else None
        if root is None and (agreed := _in_every_release(entries, found, conf)) is not None:
            out[key] = agreed
            continue
        if module is None:
            why = ("is not found around the entry" if root is None else "does not parse, in the checkout of")
            out[key] = (Symbolic(f"{key} from the config.json of {shown}: ChatLearn's {relpath}, which sets "
                                 f"it, {why} {config.script}; give it with --set {key}=N"), conf["source"])
            continue
        places = [assign_place.place(module, s, entries) for s in entries]
        if all(p is Place.ABSENT for p in places):
            continue  # this ChatLearn does not take the key from config.json: the YAML's holds
        what = _setting(entries, places, module, found, path, conf)
        if isinstance(what, dict) and found is not None:
            out[key] = (_applied(what, found), f"{found.name} config.json via {what['source']}: {found.source}")
        elif isinstance(what, str):
            out[key] = (Symbolic(f"{key} from the config.json of {shown} ({conf['source']}): {what}; "
                                 f"give it with --set {key}=N"), conf["source"])
    return out


def _in_every_release(entries: list[dict[str, Any]], found: model_facts.ModelFacts | None,
                      conf: dict[str, Any]) -> tuple[str, str] | None:
    """The key's value where the run's checkout is not here but every release `[model_config]
    releases` names sets it the same way for the model: the general entry runs (no entry for the
    model's architecture, which a release may lack) and rules/models.toml states the fact; else None."""
    general = next((s for s in entries if "architecture" not in s), None)
    special = [s for s in entries if "architecture" in s]
    releases = conf.get("releases", [])
    if not releases or general is None or found is None or general["fact"] not in found.values:
        return None
    if special and (found.architecture is None or any(s["architecture"] == found.architecture for s in special)):
        return None
    return (_applied(general, found), f"{found.name} config.json via {general['source']} (ChatLearn's checkout is not found "
                        f"around the entry; every release the rules cover sets it so: {', '.join(releases)}): "
                        f"{found.source}")


def _applied(setting: dict[str, Any], found: model_facts.ModelFacts) -> str:
    """The value `setting` gives the key: the model's fact, times its `factor` (Qwen3-Next's layers)."""
    return str(found.values[setting["fact"]] * int(setting.get("factor", 1)))


def _setting(entries: list[dict[str, Any]], places: list[Place], module: ast.Module,
             found: model_facts.ModelFacts | None, path: Any, conf: dict[str, Any]) -> dict[str, Any] | str | None:
    """The `[[model_setting]]` that sets the key for the model found, or why that is not known
    (text), or None where none does (the YAML's value holds). The entry for the model's
    architecture wins over the general one; it is ABSENT only where its function is not defined
    apart from the general one's (pai-chatlearn 1.2.0 has no update_qwen3_next_cfg: the general
    one runs). An entry ELSEWHERE leaves the key unknown."""
    if found is None and model_facts.named(path) is None:
        return f"{conf['path_key']} is not known statically"
    if found is None:
        return f"{conf['path_key']}={yaml_text(path)} is no model rules/models.toml names"
    placed = list(zip(entries, places, strict=True))
    general = next(((s, p) for s, p in placed if "architecture" not in s), None)
    special = [(s, p) for s, p in placed if "architecture" in s]
    if special and found.architecture is None:
        return f"rules/models.toml does not state {found.name}'s architecture, which decides it"
    mine = next(((s, p) for s, p in special if s["architecture"] == found.architecture), None)
    if mine is not None and mine[1] is Place.ABSENT and mine[0]["function"] in assign_place.functions(module) \
            and (general is None or general[0]["function"] != mine[0]["function"]):
        return (f"ChatLearn's {_relpath(mine[0])} defines {mine[0]['function']}, which {found.architecture} "
                f"runs, but not `{mine[0]['code']}` in it ({mine[0]['source']})")
    chosen = mine if mine is not None and mine[1] is not Place.ABSENT else general
    if chosen is None or chosen[1] is Place.ABSENT:
        return None
    setting, where = chosen
    if where is Place.ELSEWHERE:
        branch = f" for {setting['architecture']}" if "architecture" in setting else ""
        return (f"ChatLearn's {_relpath(setting)} does not run `{setting['code']}` in {setting['function']}"
                f"{branch} as {setting['source']} says, but assigns it elsewhere")
    if setting["fact"] not in found.values:
        return f"rules/models.toml does not state {found.name}'s {setting['fact']}"
    return setting


def _module(file: Path) -> ast.Module | None:
    """The parsed module, or None where it does not parse."""
    try:
        return ast.parse(file.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None


def _role_defaults(defaults: list[dict[str, Any]], config: LaunchConfig) -> dict[str, tuple[Any, str]]:
    """Each `[[role_default]]` field's default as the run's own ChatLearn states it: read from the
    checkout the entry script is in (the dataclass differs between releases: pai-chatlearn 1.2.0
    on PyPI defaults overlap_p2p_comm to False, the checkout the rules quote to True); a checkout
    not found leaves it unknown, a field it lacks is not set (Megatron-LM's default holds)."""
    out: dict[str, tuple[Any, str]] = {}
    for item in defaults:
        relpath = _relpath(item)
        root = _checkout(config, relpath)
        if root is None:
            out[item["key"]] = (Symbolic(f"ChatLearn's {item['key']} default, in {relpath}, which is not found "
                                         f"around the entry {config.script}"), relpath)
            continue
        fields = _dataclass_defaults(root / relpath)
        if item["key"] in fields:
            out[item["key"]] = (fields[item["key"]], str(root / relpath))
    return out


def _relpath(item: dict[str, Any]) -> str:
    """The file an entry's `source` ("REPO@COMMIT path:line") names."""
    return str(item["source"].split()[1].rpartition(":")[0])


def _checkout(config: LaunchConfig, relpath: str) -> Path | None:
    """The ChatLearn checkout the entry script is in: the first folder above it holding `relpath`."""
    entry = Path(str(config.script)) if isinstance(config.script, str) else None
    if entry is not None and not entry.is_absolute() and config.launch_dir is not None:
        entry = Path(config.launch_dir) / entry
    return next((d for d in (entry.parents if entry is not None else ()) if (d / relpath).is_file()), None)


def _dataclass_defaults(module: Path) -> dict[str, Any]:
    """`name: T = field(default=LITERAL)` of the module's dataclasses, as flag text."""
    try:
        tree = ast.parse(module.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError):
        return {}
    out: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(node.value, ast.Call):
            given = [k.value for k in node.value.keywords if k.arg == "default"]
            if given and isinstance(given[0], ast.Constant):
                out.setdefault(node.target.id, yaml_text(given[0].value))
    return out


def _options(words: list[Any], rule: dict[str, Any]) -> tuple[Any, list[tuple[str, Any]], list[Any]]:
    """(the config file, the `key=value` updates in order, the words not statically one):
    argparse's options first, then everything (argparse.REMAINDER) read as overrides; a word not
    known to be one (`"$@"`, `${KEY}=x`) may set anything, so it is kept to be said."""
    name: Any = None
    k = 0
    while k < len(words):
        option, eq, value = str(words[k]).partition("=")
        if option not in rule["file_options"]:
            break
        if eq:
            name = value if isinstance(words[k], str) else Symbolic(str(words[k]))
        elif k + 1 < len(words):
            k += 1
            name = words[k]
        k += 1
    updates: list[tuple[str, Any]] = []
    unseen: list[Any] = []
    for word in words[k:]:
        parsed = override(word)
        if parsed is not None:
            updates.append(parsed)
        else:
            unseen.append(word)
    return name, updates, unseen


def _unknown_words(config: LaunchConfig, args: list[Field], updates: list[tuple[str, Any]],
                   unseen: list[Any], path: str) -> list[Any]:
    """Each word wholly unknown among the overrides (`${EXTRA}`, `${KEY}=x`) is one of the
    training command's unknown words (flags.unresolved: what it may set is unknown unless an
    override after it sets it, by its dotted key or its leaf); `"$@"` adds nothing. The words
    still unseen: each may set anything, said by the caller."""
    keys = [key for key, _ in updates]
    seen = 0  # overrides read so far: those after a word are keys[seen:]
    left = list(unseen)
    for f in args:
        if override(f.value) is not None and f.value not in unseen:
            seen += 1
        elif isinstance(f.value, Symbolic) and f.value in unseen and (
                str(f.value) in SCRIPT_ARGUMENTS or wholly_unknown(f.value, config)):
            left.remove(f.value)
            word = unresolved(config, f, path, "overrides")
            if word is not None:
                word.after = frozenset([*keys[seen:], *(k.rpartition(".")[2] for k in keys[seen:])])
    return left


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise Unreadable(f"{file} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"{file}: {exc}") from None


def _update(data: dict[str, Any], key: str, value: Any) -> None:
    """OmegaConf.update(cfg, key, value): the dotted key set, missing levels made; a value not
    known statically is `Unresolved`, `null` is None."""
    *parents, last = key.split(".")
    node = data
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    if isinstance(value, Symbolic):
        node[last] = Unresolved(str(value), f"`{key}` is given as {value}, not known statically")
    else:
        node[last] = None if value is None or value in _NULLS else value


def _leaves(node: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Every leaf of a role's mapping as (dotted key, value): set_megatron_cfg recurses into the
    nested configs (megatron_model_cfg, optimizer) and sets each field by its own name."""
    out: list[tuple[str, Any]] = []
    for key, value in node.items():
        dotted = f"{prefix}{key}"
        out += _leaves(value, dotted + ".") if isinstance(value, dict) else [(dotted, value)]
    return out
