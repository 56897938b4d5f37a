"""Whether the recipe a Megatron-Bridge run_recipe.py command names exists at all.

run_recipe.py looks the recipe up by name in the recipe packages (`[recipe_runner] recipe_dirs`
of rules/megatron-bridge.toml) and fails on every rank where none has it (`missing`, there). Once
the run's sources are known (scan.read_config), a name the script's own checkout lacks is judged
against the megatron-bridge the run is judged on: the release stated (--target, a pin, the copy
installed here), else every release the rules verify. Spelt by none: a start-up error naming the
recipe and the closest names the checkout has (difflib); spelt by some verified releases only:
undecided, naming them, until --target gives the release.

Fail closed: "spelt" is the name as a word anywhere in the packages' files (a definition, a
re-export, an `__all__` entry alike), with the files of modules they star-import from outside them
(absolute, or relative to the importing file's package); a module `__getattr__`, a name registered
at run time (`setattr(`, `sys.modules`, `vars()`, `locals()`, `globals()`, `__dict__`, `exec(`)
or a star import not found here spells every name. A script
outside a checkout, a name not known statically or not an identifier, or a release that cannot be
had decides nothing (the recipe's fields stay unknown, as before).
"""

from __future__ import annotations

import ast
import difflib
import functools
import os
import re
from pathlib import Path

from auditor import rulebook
from auditor.config.flags import STARTUP, normalise
from auditor.config.frontends.megatron_bridge import RULES, checkout_root, recipe_name
from auditor.config.model import LaunchConfig
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.sources import SourceSet, resolve

KIND = "launch.recipe-missing"
# The ways a module gains names at run time (a module __getattr__, a name registered through the
# module's namespace, code run from a string): where one is in the packages, any name may exist. A
# name built by formatting (f"{model}_{task}_config", recipes/utils/naming.py at 067f987) becomes
# a module's name only through one of these, so it is read through them.
_OPEN = re.compile(r"\b__[gs]etattr__\b|\b(?:globals|vars|locals|setattr|exec)\(|\bsys\.modules\b"
                   r"|\b__dict__\b")
_STAR = re.compile(r"^\s*from\s+(\.*[\w.]*)\s+import\s+\*", re.M)


def check_recipe(launch: LaunchConfig, srcs: list[SourceSet], planned: bool) -> None:
    """Adds the start-up error (or the undecided release) of a recipe name no code defines.
    `planned`: the releases are a combination chosen for a script that states none."""
    if launch.style != "megatron-bridge":
        return
    book = rulebook.load(RULES)
    runner = book.section("recipe_runner")
    name, _ = recipe_name(lambda option: launch.launcher_flags.get(option.lstrip("-")), runner)
    root = checkout_root(launch.path, launch.script, runner)
    moved, elsewhere = _run_from(launch, runner["recipe_dirs"][0])
    root = moved or root
    packages = tuple(d.removeprefix("src/") for d in runner["recipe_dirs"])
    if name is None or not name.isidentifier() or root is None or spelt(root, packages, name) is not False:
        return
    framework = book.section("framework")
    distribution = framework["distribution"]
    bridge = next((s for s in srcs if s.name == distribution), None)
    if bridge is None:
        return
    free = planned and distribution not in launch.pins and bridge.kind in ("wheel", "sdist")
    releases = _releases(distribution, framework["verified"]) if free else [bridge]
    if releases is None:
        return
    found = {s.version or s.label: spelt(s.root, packages, name) for s in releases}
    if any(v is None for v in found.values()):
        return
    flag = launch.launcher_flags.get(runner["recipe_option"].lstrip("-"))
    where = f"{launch.path}:{flag.line if flag else launch.command_line}"
    have = [v for v, yes in found.items() if yes]
    lack = ", ".join(v for v, yes in found.items() if not yes)
    if have:
        defines = f"{distribution} {', '.join(have)} define{'s' if len(have) == 1 else ''} it"
        launch.diagnostics.append(Finding(KIND, "info", (
            f"recipe {name} is not in this checkout ({root}) nor in {distribution} {lack}; {defines}; "
            f"where it is missing, {runner['missing'].format(recipe=name)}"), where=where, detail={
                "undecided": f"whether recipe {name} exists where the run imports it: {defines}, "
                             f"{lack} and this checkout do not (where it is missing, the run stops "
                             "at start-up)",
                "decide": f"--target {distribution}==VERSION (the release the run imports)"}))
        return
    near = closest(root, packages, name)
    hint = f" (closest: {', '.join(near)})" if near else ""
    hint += _assumed(launch, runner)
    # the copy the run imports is not here: read as this checkout or a release judged, and said
    copy = (f"; the run imports the {distribution} {elsewhere}, not here: read as this checkout or "
            f"{distribution} {lack} (--target {distribution}==VERSION gives the release there)"
            if elsewhere else "")
    launch.diagnostics.append(Finding(KIND, "error", (
        f"`{runner['recipe_option']} {name}` names no recipe of this checkout or of {distribution} "
        f"{lack}{hint}: {runner['missing'].format(recipe=name)}{copy}"),
        fix=f"name a recipe that exists, e.g. {runner['recipe_option']} {near[0]}" if near else
        f"name a recipe that {', '.join(packages)} define(s)",
        where=where, detail={**STARTUP, "recipe": name, "closest": near,
                             "headline": f"recipe {name} does not exist{hint}" + (
                                 f" in this checkout nor in {distribution} {lack} (the run imports the "
                                 f"copy {elsewhere}, read as one of these)" if elsewhere else "")}))


def _assumed(launch: LaunchConfig, runner: dict) -> str:
    """The variables the recipe name rests on through a `${NAME:-x}` fallback (`RECIPE=${RECIPE:-x}`,
    `${1:-x}`): the name is the script's default, which its caller may replace."""
    options = (runner["recipe_option"], runner["model_option"], runner["mode_option"])
    names = dict.fromkeys(n for o in options for n in launch.option_fallbacks.get(normalise(o), ()))
    said = ", ".join(f"${n}" if n.isdigit() else n for n in names)
    return f" (the script's default, with {said} unset)" if said else ""


def _run_from(launch: LaunchConfig, recipes: str) -> tuple[Path | None, str]:
    """Where a `cd` moved the command (launch.workdir): the checkout there, where it is here (its
    recipes are the ones imported), else (None, where it is, as said): not here, the copy the run
    imports is read as this checkout or a release judged, and said. (None, "") not moved."""
    if launch.workdir == "":
        return None, ""
    if launch.workdir is None:
        return None, "in a directory not known statically"
    where = Path(os.getcwd(), launch.workdir)
    found = next((d for d in (where, *where.parents) if (d / recipes).is_dir()), None)
    return (found, "") if found is not None else (None, f"at {launch.workdir}")


def _releases(distribution: str, verified: list[str]) -> list[SourceSet] | None:
    """Every release the rules verify, or None where one cannot be had (offline, say)."""
    try:
        return [resolve(f"{distribution}=={v}") for v in verified]
    except InputError:
        return None


def spelt(root: Path, packages: tuple[str, ...], name: str) -> bool | None:
    """Whether `name` is a word of the recipe packages under `root` (a checkout, `src/` layout or
    not, or an unpacked release); None where their names are made at run time."""
    words = _words(root, packages)
    return None if words is None else name in words


def closest(root: Path, packages: tuple[str, ...], name: str) -> list[str]:
    """The public functions and re-exported names of the recipe packages nearest to `name`."""
    return difflib.get_close_matches(name, sorted(_public(root, packages)), n=3, cutoff=0.6)


@functools.lru_cache(maxsize=16)
def _words(root: Path, packages: tuple[str, ...]) -> frozenset[str] | None:
    files = _files(root, packages)
    if files is None:
        return None
    words: set[str] = set()
    for path in files:
        text = _text(path)
        if _OPEN.search(text):
            return None
        words.update(re.findall(r"\w+", text))
    return frozenset(words)


@functools.lru_cache(maxsize=16)
def _public(root: Path, packages: tuple[str, ...]) -> frozenset[str]:
    out: set[str] = set()
    for path in _files(root, packages) or []:
        try:
            tree = ast.parse(_text(path))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                out.add(node.name)
            elif isinstance(node, ast.ImportFrom):
                out.update(a.asname or a.name for a in node.names)
    return frozenset(n for n in out if not n.startswith("_") and n != "*")


def _files(root: Path, packages: tuple[str, ...]) -> list[Path] | None:
    """The packages' .py files, with those of modules they star-import from elsewhere; None
    where such a module is not under `root`."""
    base = root / "src" if (root / "src").is_dir() else root
    todo = [base / p for p in packages]
    seen: set[Path] = set()
    out: list[Path] = []
    while todo:
        where = todo.pop()
        if where in seen:
            continue
        seen.add(where)
        found = sorted(where.rglob("*.py")) if where.is_dir() else [where] if where.is_file() else []
        out += found
        for path in found:
            for module in _STAR.findall(_text(path)):
                target = _module(base, path, module)
                if target is None:
                    return None
                if not any(target.is_relative_to(d) for d in seen if d.is_dir()):
                    todo.append(target)
    return out


def _module(base: Path, path: Path, module: str) -> Path | None:
    """The package directory or module file `module` names, star-imported by `path`: absolute
    from `base`, or relative (leading dots: the file's package, then its parents); None where it
    is not under `base`."""
    dots = len(module) - len(module.lstrip("."))
    if dots > len(path.parents):
        return None
    start = base if not dots else path.parents[dots - 1]
    rest = [p for p in module.lstrip(".").split(".") if p]
    rel = start.joinpath(*rest)
    if not rel.is_relative_to(base):
        return None
    return next((c for c in (rel, rel.with_suffix(".py")) if c.exists() and (rest or c.is_dir())), None)


@functools.lru_cache(maxsize=8192)
def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
