"""NeMo-RL's `uv run python examples/run_grpo.py --config X.yaml a.b.c=value ...` (rules/nemo-rl.toml).

The `--config` file, with its `defaults:` parents, and the Hydra overrides after it give the
policy's backend. DTensor issues no pipeline P2P: a `launch.not-pipeline` note. Megatron runs
megatron-core's schedules on its defaults, which NeMo-RL's code leaves alone: the size goes to
`entry_values` and the run is judged on megatron-core (at one stage, as any Megatron run at
PP 1), its `env_vars` the workers' environment; at two or more stages a policy whose
`model_overrides` may set any TransformerConfig field, or policies at different sizes, are
`launch.not-covered`. A
config not known statically (`--config ${CONFIG_PATH}`), which may set the backend, the size,
env_vars and model_overrides, or anything else not known statically (an override word, an
interpolation) is undecided: `launch.unknown-stack` naming the key. Each becomes the verdict in
config.launch.refuse_not_pipeline, or, judged, in the scan.
"""

from __future__ import annotations

import ast
import os
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.bash.values import EnvVar, Field, Symbolic
from auditor.bash.checkout_copy import copied_root
from auditor.config.configfiles import Unreadable, load_file, load_yaml
from auditor.config.entry_script import dotted
from auditor.config.expr import UNKNOWN
from auditor.config.frontend_parser import find_script
from auditor.config.frontends.reader import Reader
from auditor.config.hydra_compose import Unresolved, at
from auditor.config.model import LaunchConfig
from auditor.config.overrides import override, read_overrides, set_key, typed
from auditor.findings import Finding
from auditor.rulebook.launchers import Spelling

RULES = "nemo-rl"
_MAX_PARENTS = 16


class NemoUndecided(Exception):
    """Why the backend or the size is not known statically."""


class ConfigUnknown(NemoUndecided):
    """The config file itself is not known statically or not read: `word`, the `--config` value."""

    def __init__(self, why: str, word: Field | None) -> None:
        super().__init__(why)
        self.word = word


class NemoRlReader(Reader):
    style = "nemo-rl"

    def read(self, config: LaunchConfig, args: list[Field], launcher: dict, spelling: Spelling,
             path: str, parser_roots: tuple[Path, ...]) -> None:
        rule = rulebook.load(RULES).data["nemo_rl_policy"]
        # The run script's argparse (`--config`, the rest Hydra overrides) is NeMo-RL's, read here:
        # its sizes are the config's, not stores an entry reader would look for in its closure.
        config.builds_parser = RULES
        name = f"`{config.launcher}`"
        where = f"{path}:{config.command_line}"
        words = [f for f in args if f.value != rule["config_option"]]
        read_overrides(config, [f for f in words if override(f.value) is not None], path)
        notes: list[str] = []
        script = str(config.script_read or config.script)
        try:
            data, said = _composed(rule, args, path, _default_config(config, path), config.workdir,
                                      config.copies)
            sizes, undecided = _sizes(rule, data, script, said)
            staged = [(role, size) for role, size in sizes if size > 1]
            megatron = staged or [(role, size) for role, size in sizes if size == 1][:1]
            if _generates_on_stages(config, rule, data, script, said, where):
                return
            if megatron:  # one Megatron Policy keeps the run megatron-core's, whatever the others are
                if undecided is not None:
                    raise undecided
                _worker_env(config, rule, data, script, said)
                _passed(config, rule, data, script, {role for role, _ in megatron}, said, where)
                # model_overrides cannot move a policy off one stage (rules/nemo-rl.toml, above `what`)
                _on_stages(config, rule, megatron, _overridden(rule, data, script) if staged else [], said, where)
                return
            notes = [rule["dtensor"].format(launcher=name, role=role, where=said) for role, _ in sizes]
            if undecided is not None:
                raise undecided
        except NemoUndecided as exc:
            _unknown_stack(config, rule, exc, name, where)
            return
        note = "; ".join(notes)
        config.diagnostics.append(Finding("launch.not-pipeline", "info", note, where=where,
                                          detail={"command": config.launcher}))


def _generates_on_stages(config: LaunchConfig, rule: dict, data: dict[str, Any], script: str,
                         said: str, where: str) -> bool:
    """Whether a Policy generates with a Megatron inference model on two or more stages (NOT
    COVERED, rules/nemo-rl.toml above `generation`); NemoUndecided where its generation backend or
    that model's size is not known statically."""
    for role, section in _roles(rule, data, script):
        backend = at(section, rule["generation_key"]) if isinstance(section, dict) else None
        if backend is not None and (not isinstance(backend, str) or "${" in backend):
            raise NemoUndecided(f"{role}.{rule['generation_key']} is {backend!r} ({said})")
        if backend != rule["generation_megatron"]:
            continue
        size = at(section, rule["generation_size_key"])
        size = at(section, rule["size_key"]) if size is None else size
        if type(size) is not int or size < 1:
            raise NemoUndecided(f"{role}.{rule['generation_size_key']} is {size!r} ({said}): the size of "
                                "its Megatron inference model")
        if size > 1:
            config.diagnostics.append(Finding(
                "launch.not-covered", "warning",
                rule["generation"].format(launcher=f"`{config.launcher}`", role=role, size=size, where=said),
                where=where, detail={"stack": RULES, "decide": rule["decide"], "source": rule["generation_source"]}))
            return True
    return False


def _unknown_stack(config: LaunchConfig, rule: dict, exc: NemoUndecided, name: str, where: str) -> None:
    config.diagnostics.append(Finding(
        "launch.unknown-stack", "warning",
        f"{name}: which backend NeMo-RL trains a policy with, and at how many pipeline stages, is "
        f"not known: {exc}", where=where,
        detail={"undecided": f"policy.{rule['megatron_key']}",
                "decide": f"--command '{config.launcher} {rule['config_option']} CONFIG.yaml ...' "
                          f"with the config and overrides the run gets: they give policy."
                          f"{rule['megatron_key']}, policy.{rule['dtensor_key']} and policy."
                          f"{rule['size_key']} of each Policy the run script builds ({exc})"}))


def _on_stages(config: LaunchConfig, rule: dict, staged: list[tuple[str, int]], overridden: list[str],
               said: str, where: str) -> None:
    """Megatron Policies: megatron-core's schedules at their size, on megatron-core's defaults
    (rules/nemo-rl.toml); NOT COVERED where model_overrides may set any field, or where the
    policies' sizes differ."""
    name = f"`{config.launcher}`"
    role, size = staged[0]
    what = rule["what"].format(launcher=name, role=role, size=size, where=said)
    sizes = sorted({s for _, s in staged})
    why = (f"{', '.join(overridden)} set {rule['model_overrides_key']}: {rule['covers']}" if overridden else
           rule["several"].format(sizes=", ".join(f"{r} {s}" for r, s in staged)) if len(sizes) > 1 else "")
    if why:
        config.diagnostics.append(Finding(
            "launch.not-covered", "warning", f"{what}: {why}",
            where=where, detail={"stack": RULES, "decide": rule["decide"], "source": rule["source"]}))
        return
    config.entry_values["pipeline_model_parallel_size"] = (size, f"{what}: {rule['stages']}", where)
    _placed(config, rule, where)


def _passed(config: LaunchConfig, rule: dict, data: dict[str, Any], script: str, roles: set[str],
            said: str, where: str) -> None:
    """The megatron_cfg sizes NeMo-RL sets on the Megatron Policies' TransformerConfig (rules
    `passed`), as the run's settings: unknown where not known statically or where the Policies
    give different values; a field left null stays megatron-core's to derive."""
    given: dict[str, set[object]] = {}
    for role, section in _roles(rule, data, script):
        if role not in roles or not isinstance(section, dict):
            continue
        for key in rule["passed"]:
            value = at(section, f"{rule['passed_section']}.{key}")
            if value is not None:
                known = type(value) in (int, bool) and (type(value) is bool) == (key == "sequence_parallel")
                given.setdefault(key, set()).add(value if known else UNKNOWN)
    for key, values in given.items():
        value = next(iter(values)) if len(values) == 1 else UNKNOWN
        config.entry_values[key] = (
            value, f"policy.{rule['passed_section']}.{key} ({said}): {rule['passed_source']}", where)


def _placed(config: LaunchConfig, rule: dict, where: str) -> None:
    """What a Megatron policy's workers get that the command does not state: NCCL, and a world
    size Ray's placement decides."""
    config.entry_values["distributed_backend"] = (
        rule["backend"], f"{rule['backend_source']}: `{rule['backend_code']}`", where)
    for key in ("nproc_per_node", "nnodes"):  # read after the launcher's own count, which it replaces
        config.entry_values[key] = (UNKNOWN, f"{key}: {rule['world']}", where)


def _worker_env(config: LaunchConfig, rule: dict, data: dict[str, Any], script: str, said: str) -> None:
    """Each Megatron Policy's env_vars, which NeMo-RL hands its workers' environment over the
    script's (lm_policy.py:147): the environment the torch rules read. A value not known
    statically (an interpolation, a mapping) is unknown; so is one two Policies give differently;
    env_vars that are no mapping leave the run undecided."""
    given: dict[str, set[str | None]] = {}
    for role, section in _roles(rule, data, script):
        env = at(section, rule["env_vars_key"]) if isinstance(section, dict) and _switch(
            section, rule["megatron_key"], role) else None
        if env is not None and not isinstance(env, dict):
            raise NemoUndecided(f"{role}.{rule['env_vars_key']} is {env!r} ({said}), which may set any variable")
        for name, value in (env or {}).items():
            known = isinstance(value, (str, int, float, bool)) and "${" not in str(value)
            given.setdefault(str(name), set()).add(str(value) if known else None)
    for name, values in given.items():
        value = next(iter(values)) if len(values) == 1 else None
        config.env[name] = EnvVar(name, Symbolic(f"policy.{rule['env_vars_key']}.{name} ({said})")
                                  if value is None else value, config.command_line, "inline")


def _overridden(rule: dict, data: dict[str, Any], script: str) -> list[str]:
    """The Policies whose config sets model_overrides (nemo_rl/models/megatron/setup.py:662);
    NemoUndecided where an override not known statically may set them or not."""
    found = []
    for role, section in _roles(rule, data, script):
        value = at(section, rule["model_overrides_key"]) if isinstance(section, dict) else None
        if isinstance(value, Unresolved):
            raise NemoUndecided(f"{role}.{rule['model_overrides_key']} is set by {value.text}, {value.why}")
        if value:
            found.append(role)
    return found


def _roles(rule: dict, data: dict[str, Any], script: str) -> list[tuple[str, Any]]:
    """Each Policy the run script builds, as (its name, its config section): the sections the
    rules list for the script's name, one per item where a section holds a list."""
    sections = next((r["sections"] for r in rule["roles"] if _named(script, r)), ["policy"])
    found: list[tuple[str, Any]] = []
    for section in sections:
        value = at(data, section)
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        found += [(section if k is None else f"{section}[{k}]", item) for k, item in items]
    return found


def _sizes(rule: dict, data: dict[str, Any], script: str,
           said: str) -> tuple[list[tuple[str, int]], NemoUndecided | None]:
    """The stages of each Policy whose backend is known, and why one is not known (the first)."""
    sizes: list[tuple[str, int]] = []
    undecided: NemoUndecided | None = None
    for role, section in _roles(rule, data, script):
        try:
            sizes.append((role, _stages(rule, section, role, said)))
        except NemoUndecided as exc:
            undecided = undecided or exc
    for key in next((r.get("unread", []) for r in rule["roles"] if _named(script, r)), []):
        if at(data, key) not in (None, False):
            undecided = undecided or NemoUndecided(f"{key} is {at(data, key)!r} ({said}): {rule['unread']}")
    return sizes, undecided


def _named(script: str, role: dict) -> bool:
    base = script.replace("\\", "/").rsplit("/", 1)[-1]
    return any(fnmatch(base, s) for s in role["scripts"])


def _stages(rule: dict, section: Any, role: str, said: str) -> int:
    """The pipeline stages one Policy runs at: 0 on DTensor, else its Megatron size."""
    if not isinstance(section, dict):
        raise NemoUndecided(f"{role} is {section!r} ({said}), no config section")
    megatron = _switch(section, rule["megatron_key"], role)
    dtensor = _switch(section, rule["dtensor_key"], role)
    if dtensor and not megatron:
        return 0
    if megatron and not dtensor:
        size = at(section, rule["size_key"])
        if type(size) is not int or size < 1:
            raise NemoUndecided(f"{role}.{rule['size_key']} is {size!r} ({said})")
        return size
    raise NemoUndecided(f"{role}.{rule['megatron_key']} is {megatron} and {role}.{rule['dtensor_key']} is "
                    f"{dtensor} ({said}): NeMo-RL refuses both or neither")


def _switch(data: dict[str, Any], key: str, role: str) -> bool:
    value = at(data, key)
    if value is None or type(value) is bool:
        return bool(value)  # lm_policy.py: `.get("enabled", False)`
    raise NemoUndecided(f"{role}.{key} is {value!r}")


def _default_config(config: LaunchConfig, path: str) -> Path | None:
    """The config a run script loads without `--config`: `args.config =
    os.path.join(os.path.dirname(__file__), "configs", "grpo_math_1B.yaml")` (examples/run_grpo.py),
    read from the script beside the launch; None where it is not found or not so written."""
    script = find_script(path, config.script_read or str(config.script), entry=True)
    try:
        tree = ast.parse(script.read_text(encoding="utf-8")) if script is not None else None
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree or ast.Module(body=[], type_ignores=[])):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and dotted(node.targets[0]) == "args.config"
                and isinstance(node.value, ast.Call) and dotted(node.value.func) == "os.path.join"
                and node.value.args and ast.unparse(node.value.args[0]) == "os.path.dirname(__file__)"
                and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.value.args[1:])):
            assert script is not None
            return script.parent.joinpath(*[str(a.value) for a in node.value.args[1:] if isinstance(a, ast.Constant)])
    return None


def _composed(rule: dict, args: list[Field], path: str,
              default: Path | None, workdir: str | None, copies: dict[str, str]) -> tuple[dict[str, Any], str]:
    """The config as the run script composes it, and where it was read."""
    named = [args[k + 1] for k, f in enumerate(args[:-1]) if f.value == rule["config_option"]]
    files: list[object] = [f.value for f in named]
    if not files and default is None:
        raise NemoUndecided(f"no {rule['config_option']} is given, and the run script's own default is not read")
    if files and not isinstance(files[-1], str):
        raise ConfigUnknown(f"{rule['config_option']} {files[-1]} is not known statically", named[-1])
    try:
        found, data = load_file(str(files[-1]), path, workdir, copies) if files else (str(default), _load(default))
    except Unreadable as exc:
        raise ConfigUnknown(f"{files[-1] if files else default} is not read: {exc}",
                            named[-1] if named else None) from None
    try:
        data = _with_parents(rule, Path(found), _unshared(data), 0, copied_root(workdir, copies))
    except Unreadable as exc:
        raise NemoUndecided(f"{files[-1] if files else default} is not read: {exc}") from None
    for word in args:
        given = override(word.value)
        if not isinstance(word.value, str) and given is None:
            raise NemoUndecided(f"the word {word.value} may override any key")
        if given is None:
            continue
        key, value = given
        if not isinstance(value, str) and value is not None:
            # `++cluster.num_nodes=$NUM_ACTOR_NODES`: that key, its value unknown (read_overrides reads
            # the word so): a reading of it, or of a key under it, is undecided, the others stand
            set_key(data, key, Unresolved(str(word.value), "its value is not known statically"))
            continue
        set_key(data, key, None if value is None else typed(value))
    return data, f"{Path(found).name} and the overrides"


def _with_parents(rule: dict, found: Path, data: dict[str, Any], depth: int, bound: str | None) -> dict[str, Any]:
    """load_config_with_inheritance: each `defaults` parent, relative to the file's directory,
    merged under it. `bound`: the checkout whose new copy the command runs in (bash.checkout_copy),
    which a relative parent may not leave (what lies beside the copy is not known)."""
    parents = data.pop(rule["inherit_key"], None)
    if parents is None:
        return data
    if depth >= _MAX_PARENTS:
        raise Unreadable(f"{found}: `{rule['inherit_key']}` nested more than {_MAX_PARENTS} deep")
    base: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents if isinstance(parents, list) else [None]:
        if not isinstance(parent, str):
            raise Unreadable(f"{found}: `{rule['inherit_key']}: {parents!r}` is no file name")
        file = Path(parent) if parent.startswith("/") else found.parent / parent
        if bound is not None and not parent.startswith("/") and not os.path.normpath(file).startswith(bound + "/"):
            raise Unreadable(f"{found}: `{rule['inherit_key']}: {parent}` lies outside the copy of the checkout "
                             "the command runs in, whose other files are not known statically")
        _merge(base, _with_parents(rule, file, _load(file), depth + 1, bound), rule["override_marker"])
    _merge(base, data, rule["override_marker"])
    return base


def _load(file: Path | None) -> dict[str, Any]:
    """A YAML file's mapping; Unreadable where there is none."""
    if file is None:
        raise Unreadable("no file")
    if not file.is_file():  # never a FIFO or a device, which would wait
        raise Unreadable(f"{file}: not a regular file")
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"{file}: {exc}") from None
    loaded = _unshared(load_yaml(text, file))
    if not isinstance(loaded, dict):
        raise Unreadable(f"{file} holds no mapping of settings")
    return loaded


def _unshared(value: Any) -> Any:
    """A copy with no node shared: OmegaConf.create copies each YAML alias (`<<: *BASE`), so an
    override of one place leaves the other as it was (copy.deepcopy would keep them shared)."""
    if isinstance(value, dict):
        return {k: _unshared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshared(v) for v in value]
    return value


def _merge(into: dict[str, Any], other: dict[str, Any], marker: str) -> None:
    """merge_with_override: OmegaConf.merge, a section marked `_override_: true` replacing."""
    for key, value in other.items():
        if isinstance(value, dict) and value.pop(marker, False):
            into[key] = value
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value, marker)
        else:
            into[key] = value
