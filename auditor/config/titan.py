"""torchtitan's job config, read from the release the run uses: the settings its trainer starts
from, joined to the launch's flags where the command line does not give them (torchtitan's own
order: `--section.key` overrides win).

Two forms, each named by a rules/torchtitan.toml `[[config_file]]` entry for the releases that
use it: `titan-toml` (0.1.0-0.2.2: `--job.config_file X.toml`, its `[section]` tables over the
release's dataclass defaults) and `titan-registry` (0.3.0: `--module M --config NAME`, the function
NAME of M's `config_registry.py`, read statically: `Trainer.Config(training=TrainingConfig(...),
parallelism=ParallelismConfig(...), model_spec=model_registry("8B"))`, a call of another registry
function, `config.section.key = value` assignments). The model's `dim` and `n_layers` come from
the flavor's entry in the model package's flavor table (`"8B": TransformerModelArgs(dim=4096, ...)`
or `"8B": _8b` whose body assigns `dim = 4096`).

What cannot be read (a file not found, a statement the reader does not understand) is not a
default: the settings stay as the rules leave them (unknown), and a diagnostic names the reason.
"""

from __future__ import annotations

import ast
import difflib
import re
import tomllib
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.config.flags import STARTUP
from auditor.config.frontend_parser import find_script
from auditor.config.model import Flag, LaunchConfig
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.rulebook.frameworks import launched_by
from auditor.sources import SourceSet, resolve

MODEL_KEYS = ("dim", "n_layers")  # read from the flavor's entry; flags `model.dim`, `model.n_layers`


class UnreadableJobConfig(Exception):
    """Why the job config cannot be read."""


def read_job_config(launch: LaunchConfig, srcs: list[SourceSet]) -> None:
    """Adds the settings of the run's torchtitan job config to `launch.flags`, each flag not
    already given on the command line (called once the sources are known)."""
    titan = next((s for s in srcs if s.name == "torchtitan"), None)
    if titan is None:
        return
    for entry in rulebook.load("torchtitan", titan.version).table("config_file"):
        if not launched_by(launch.launcher, entry["launchers"]):
            continue
        given = dict(launch.flags)  # the command line's own, before the job config joins them
        _read_entry(launch, titan, entry)
        _check_overrides(launch, titan, entry, given)


def _read_entry(launch: LaunchConfig, titan: SourceSet, entry: dict[str, Any]) -> None:
    """The settings of the job config one [[config_file]] entry names, into `launch.flags`."""
    flag = launch.flags.get(entry["flag"])
    if flag is None:
        return
    where = f"{launch.path}:{flag.line}"
    try:
        if entry["kind"] == "titan-toml":
            settings, origin = _toml(_top(titan), entry, flag, launch.path)
        else:
            settings, origin = _registry(_top(titan), entry, launch, flag)
    except UnreadableJobConfig as exc:
        launch.diagnostics.append(Finding(
            "launch.config-file-unread", "warning",
            f"torchtitan's job config ({flag.spelling} {flag.value}) cannot be read: {exc}; "
            f"the settings it gives are unknown, not defaults",
            fix="give the settings on the command line (--parallelism.KEY VALUE) or with "
                "--set KEY=VALUE", where=where))
        return
    given = 0
    for key, (value, said) in settings.items():
        if key in launch.flags or value is None and key.startswith("model."):
            continue
        launch.flags[key] = Flag(key, "None" if value is None else str(value), flag.line, said)
        given += 1
    launch.diagnostics.append(Finding(
        "launch.config-file", "info", f"read {origin}: {given} setting(s)", where=where))

def _top(titan: SourceSet) -> Path:
    """The folder holding `torchtitan/`, which the rules' paths are relative to (a `--target
    torchtitan` in a clone is the package folder itself)."""
    return titan.root.parent if titan.is_package_dir else titan.root


def _check_overrides(launch: LaunchConfig, titan: SourceSet, entry: dict[str, Any],
                     given: dict[str, Flag]) -> None:
    """torchtitan's ConfigManager hands each `--section.key` of the command line (`given`) to
    tyro.cli over the job config's dataclasses (`cli_source`), which exits on a key the class
    for `section` lacks (read from the release): the run does not start, unless a config module
    of the run's own may add the field (`_extension`). The nearest field is the fix."""
    extension = _extension(launch, titan, entry)
    for flag in given.values():
        section, dot, key = flag.spelling.lstrip("-").partition("=")[0].partition(".")
        spec = next((s for s in entry["sections"] if s.partition("=")[0] == section), None)
        if not flag.spelling.startswith("--") or not dot or spec is None:
            continue
        path, _, name = spec.partition("=")[2].partition(":")
        try:
            tree = _parse(_top(titan) / path)
        except UnreadableJobConfig:
            continue
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
        fields = {n.target.id for n in (cls.body if cls else ()) if isinstance(n, ast.AnnAssign)
                  and isinstance(n.target, ast.Name)}
        if cls is None or key.replace("-", "_") in fields:
            continue
        near = difflib.get_close_matches(key.replace("-", "_"), sorted(fields), n=1)
        written = flag.spelling.partition("=")[0]
        parser = f"tyro.cli at {entry['cli_source']}"
        headline = (f"torchtitan {titan.version} rejects `{written}`: its {name} has no field `{key}` "
                    f"({parser} exits: \"Unrecognized options\")")
        fix = f"write `--{section}.{near[0]}`" if near else f"drop `{written}`"
        where = f"{launch.path}:{flag.line}"
        if extension is None:
            launch.diagnostics.append(Finding(
                "launch.titan-unknown-flag", "error",
                f"{headline}. {name} is read from {path}; the run does not start", fix=fix, where=where,
                detail={**STARTUP, "headline": headline}))
        else:
            launch.diagnostics.append(Finding(
                "launch.titan-unknown-flag", "warning",
                f"torchtitan {titan.version}'s {name} ({path}) has no field `{key}`: {parser} rejects "
                f"`{written}` and the run does not start, unless {extension} adds it (not read here)",
                fix=fix, where=where))


def _extension(launch: LaunchConfig, titan: SourceSet, entry: dict[str, Any]) -> str | None:
    """What may add fields to the config class tyro parses into: a custom config module the run
    names (`extended_by`, on the command line or in its TOML), or a --module outside the
    release (`own_modules`: its registry may return a config class of its own); None where the
    class is the release's own."""
    flags = {k.replace("-", "_"): f for k, f in launch.flags.items()}
    for name in entry.get("extended_by", ()):
        flag = flags.get(name)
        if flag is not None and flag.value not in ("", "None", None, False):
            return f"the custom config module `{flag.value}` ({flag.spelling})"
    if entry.get("own_modules"):
        module = launch.flags.get("module")
        value = module.value if module is not None else None
        if not isinstance(value, str) or not any(
                (_top(titan) / p.format(module=value)).is_file() for p in entry["own_modules"]):
            return f"the config class of --module {value if isinstance(value, str) else '(unknown)'}"
    return None

def _defaults(root: Path, entry: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """`section.field` -> (its dataclass default, where) for each `section=path:Class`."""
    out: dict[str, tuple[Any, str]] = {}
    for spec in entry["sections"]:
        section, _, located = spec.partition("=")
        path, _, name = located.partition(":")
        tree = _parse(root / path)
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if cls is None:
            raise UnreadableJobConfig(f"{path} defines no class {name}")
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                    isinstance(node.value, ast.Constant):
                out[f"{section}.{node.target.id}"] = (
                    node.value.value, f"{section}.{node.target.id} (the default, {path}:{node.lineno})")
    return out


def _toml(root: Path, entry: dict[str, Any], flag: Flag, launch_path: str
          ) -> tuple[dict[str, tuple[Any, str]], str]:
    name = flag.value
    if not isinstance(name, str) or not name:
        raise UnreadableJobConfig(f"`{name}` is not known statically")
    found = find_script(launch_path, name)
    here = Path(launch_path).resolve().parent
    if found is None:
        raise UnreadableJobConfig(f"{name} is not found in {here} or a directory above it (it is in "
                         f"torchtitan's repository, not its release: audit where the job starts)")
    text = found.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UnreadableJobConfig(f"{found} is not TOML: {exc}") from None
    settings = _defaults(root, entry)
    lines = text.splitlines()
    for section, table in data.items():
        for key, value in table.items() if isinstance(table, dict) else ():
            if isinstance(value, (str, int, float, bool)):
                settings[f"{section}.{key}"] = (value, f"{section}.{key} ({found}:"
                                                       f"{_line_of(lines, section, key)})")
    model = data.get("model", {})
    settings.update(_model(root, str(model.get("name", "")), str(model.get("flavor", "")), str(found)))
    return settings, str(found)


def _line_of(lines: list[str], section: str, key: str) -> int:
    inside = False
    for number, line in enumerate(lines, 1):
        header = re.match(r"\s*\[([^\]]+)\]", line)
        if header:
            inside = header.group(1).strip() == section
        elif inside and re.match(rf"\s*{re.escape(key)}\s*=", line):
            return number
    return 0


def _registry(root: Path, entry: dict[str, Any], launch: LaunchConfig, flag: Flag
              ) -> tuple[dict[str, tuple[Any, str]], str]:
    module, name = launch.flags.get("module"), flag.value
    if module is None or not isinstance(module.value, str) or not isinstance(name, str):
        raise UnreadableJobConfig("--module and --config are not both known statically")
    rel = next((p for p in (f"torchtitan/models/{module.value}/config_registry.py",
                            f"torchtitan/experiments/{module.value}/config_registry.py",
                            module.value.replace(".", "/") + "/config_registry.py")
                if (root / p).is_file()), None)
    if rel is None:
        raise UnreadableJobConfig(f"the release has no config_registry for --module {module.value}")
    functions = {n.name: n for n in _parse(root / rel).body if isinstance(n, ast.FunctionDef)}
    settings = _defaults(root, entry)
    flavor = _Registry(functions, rel, settings).run(name)
    package = str(Path(rel).parent)
    if flavor:
        settings["model.flavor"] = (flavor, f"model_registry({flavor!r}) in {rel} {name}()")
    settings.update(_model(root, package.rsplit("/", 1)[-1], flavor, f"{rel} {name}()",
                           package=package))
    return settings, f"{rel} {name}()"


class _Registry:
    """One registry function, evaluated statically into `settings`; returns the model flavor."""

    SECTIONS = {"training", "parallelism"}

    def __init__(self, functions: dict[str, ast.FunctionDef], rel: str,
                 settings: dict[str, tuple[Any, str]]) -> None:
        self.functions, self.rel, self.settings = functions, rel, settings

    def run(self, name: str, depth: int = 0) -> str:
        fn = self.functions.get(name)
        if fn is None or depth > 8:
            raise UnreadableJobConfig(f"{self.rel} has no function {name}")
        flavors: dict[str, str] = {}  # local name -> the flavor model_registry was given
        flavor = ""
        for stmt in fn.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # a docstring
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
                if isinstance(target, ast.Name) and _flavor(value) is not None:
                    flavors[target.id] = _flavor(value) or ""
                    continue
                if isinstance(target, ast.Name) and isinstance(value, ast.Call) and \
                        isinstance(value.func, ast.Name) and value.func.id in self.functions \
                        and not value.args and not value.keywords:
                    flavor = self.run(value.func.id, depth + 1)
                    continue
                dotted = _dotted(target)
                if dotted and dotted.count(".") == 2 and dotted.split(".")[1] in self.SECTIONS:
                    self._set(dotted.split(".", 1)[1], value, f"{name}()")
                    continue
                if dotted and dotted.endswith(".model_spec") and _flavor(value) is not None:
                    flavor = _flavor(value) or ""
                    continue
                if dotted and "." in dotted and dotted.split(".")[1] not in self.SECTIONS | {"model_spec"}:
                    continue  # another part of the config (compile, checkpoint, ...)
            if isinstance(stmt, ast.Assert):
                continue
            if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call) and \
                    isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "Config":
                for kw in stmt.value.keywords:
                    if kw.arg in self.SECTIONS and isinstance(kw.value, ast.Call):
                        for inner in kw.value.keywords:
                            if inner.arg is None:
                                raise UnreadableJobConfig(f"{self.rel}:{kw.value.lineno}: **kwargs")
                            self._set(f"{kw.arg}.{inner.arg}", inner.value, f"{name}()")
                    elif kw.arg == "model_spec":
                        got = flavors.get(kw.value.id) if isinstance(kw.value, ast.Name) else _flavor(kw.value)
                        if got is None:
                            raise UnreadableJobConfig(f"{self.rel}:{kw.value.lineno}: the model_spec is "
                                             f"not a model_registry(FLAVOR) call")
                        flavor = got
                continue
            if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name):
                continue
            raise UnreadableJobConfig(f"{self.rel}:{stmt.lineno}: `{ast.unparse(stmt)[:60]}` in {name}() "
                             f"is not read statically")
        return flavor

    def _set(self, key: str, node: ast.expr, where: str) -> None:
        value = node.value if isinstance(node, ast.Constant) else _Missing
        self.settings[key] = (None if value is _Missing else value,
                              f"{key} ({self.rel}:{node.lineno}, {where})")
        if value is _Missing:  # computed: not a default, and not known here
            raise UnreadableJobConfig(f"{self.rel}:{node.lineno}: {key} = `{ast.unparse(node)[:40]}` "
                             f"is not a constant")


_Missing = object()


def _flavor(node: ast.expr) -> str | None:
    """The flavor of a `model_registry("8B", ...)` call."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "model_registry" and node.args and isinstance(node.args[0], ast.Constant):
        return str(node.args[0].value)
    return None


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _model(root: Path, name: str, flavor: str, origin: str, package: str | None = None
           ) -> dict[str, tuple[Any, str]]:
    """`model.dim` and `model.n_layers` of `flavor` in the model package's flavor table."""
    rel = f"{package or 'torchtitan/models/' + name}/__init__.py"
    if not flavor or not (root / rel).is_file():
        return {}
    tree = _parse(root / rel)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(value, ast.Dict):
            continue
        for key, item in zip(value.keys, value.values):
            if not (isinstance(key, ast.Constant) and key.value == flavor):
                continue
            found: dict[str, tuple[Any, str]] = {}
            if isinstance(item, ast.Call):
                for kw in item.keywords:
                    if kw.arg in MODEL_KEYS and isinstance(kw.value, ast.Constant):
                        found[f"model.{kw.arg}"] = (kw.value.value, f"{kw.arg} of {name} {flavor} "
                                                    f"({rel}:{kw.value.lineno}, from {origin})")
            elif isinstance(item, ast.Name) and item.id in functions:
                for stmt in ast.walk(functions[item.id]):
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                            isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in MODEL_KEYS \
                            and isinstance(stmt.value, ast.Constant):
                        found.setdefault(f"model.{stmt.targets[0].id}", (
                            stmt.value.value, f"{stmt.targets[0].id} of {name} {flavor} "
                                              f"({rel}:{stmt.lineno}, from {origin})"))
            return found
    return {}


def _parse(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise UnreadableJobConfig(f"{path}: {exc}") from None


def with_pipelining_torch(launch: LaunchConfig, srcs: list[SourceSet]) -> list[SourceSet]:
    """`srcs`, with the installed torch added where a run on torch's pipelining (torchtitan's,
    or a script's own: rules [torch_source]) gives no torch: its schedules are torch's, whose
    source the call graph walks. A note names the torch read; no torch installed is said as a
    warning."""
    if any(s.name == "torch" for s in srcs) or torch_scope(launch, srcs) is None:
        return srcs
    who = "torchtitan's" if any(s.name == "torchtitan" for s in srcs) else "this script's"
    where = f"{launch.path}:{launch.command_line}"
    try:
        torch = resolve("torch")
    except InputError as exc:
        launch.diagnostics.append(Finding(
            "launch.pipelining-unread", "warning",
            f"{who} schedules are torch.distributed.pipelining's, and no torch is read ({exc.cause}): "
            f"their P2P sites are not analysed", fix="pass --target torch==VERSION (the cluster's torch)",
            where=where))
        return srcs
    launch.diagnostics.append(Finding(
        "launch.pipelining-source", "info",
        f"{who} schedules are torch.distributed.pipelining's: read from the installed torch "
        f"{torch.version} (--target torch==VERSION reads another); the torch release the cluster runs is "
        f"judged as the torch line says", where=where))
    return [*srcs, torch]


def torch_scope(launch: LaunchConfig, srcs: list[SourceSet]) -> tuple[str, ...] | None:
    """The folders of torch whose P2P sites are the run's pipeline (rules [torch_source] of
    torchtitan's release, or of rules/pipelining.toml for a script's own pipelining); None
    where the run is neither."""
    titan = next((s for s in srcs if s.name == "torchtitan"), None)
    if titan is not None:
        rules = rulebook.load("torchtitan", titan.version)
    elif "pipelining" in (launch.stack.names or ()):
        rules = rulebook.load("pipelining")
    else:
        return None
    paths = rules.section("torch_source").get("paths")
    return tuple(paths) if paths else None
