"""Which framework releases a run is judged on when its script does not say (issue 22 item 2).

A release the script states (`# name==X`) or the environment has installed decides. For each
distribution of the run's stack that nothing states, the run is judged on two combinations of
releases the rules verify (`[framework] verified` of every rules file of the stack that selects on
that distribution), outermost framework first:
- the newest: each free distribution's newest verified release that the releases already chosen
  admit and that admits them (what `pip install` of the newest front end resolves to today);
- the oldest: each free distribution's oldest such release (the oldest stack the rules cover).
What admits what is each release's own `Requires-Dist` (its wheel METADATA, extras included:
ms-swift's `megatron` extra states its mcore-bridge and megatron-core), never restated by hand.
The script narrows them where it says so: a bound in a comment (`# ... mbridge>=0.13.0`), and a
Hydra override (`a.b.c=value`, no `+`) of a key the rules mark `absent` in a release, which
Hydra refuses there ("Could not override ...: Key is not in struct"), so the run cannot be on it.
Two combinations bound the covered range at a warm cost of about one scan each; releases between
them are not judged (the verdict names the two)."""

from __future__ import annotations

import email.message
import email.parser
import importlib.metadata
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from auditor import rulebook
from auditor.config import call_fit
from auditor.config.model import LaunchConfig
from auditor.download import NoSuchRelease
from auditor.errors import InputError
from auditor.rulebook.frameworks import frameworks
from auditor.sources import SourceSet, resolve

HOW = ("the newest and the oldest releases the rules verify for each framework the script does not "
       "state, each admitting the others (their Requires-Dist)")


class ReleaseUnavailable(InputError):
    """A release rules/ verifies, chosen here for a framework the script does not state, that the
    package index does not have (ROLL's mcore-adapter 0.10.0.dev0 ships only inside the ROLL
    checkout): the input is valid, the run undecided (exit 1) until `decide` gives the release."""

    def __init__(self, path: str, what: str, decide: str) -> None:
        super().__init__(path, f"{what}; decide it with {decide}")
        self.what = what
        self.decide = decide


@dataclass
class Plan:
    """The releases a run is judged on: one target list per combination, newest first."""

    stated: dict[str, str]  # distribution -> release the script or the environment gives
    installed: set[str] = field(default_factory=set)  # of `stated`: the environment's, not a pin
    combinations: list[dict[str, str]] = field(default_factory=list)  # distribution -> release
    # distribution -> the source directory the run imports it from (config/source_tree.py)
    source_dirs: dict[str, str] = field(default_factory=dict)

    @property
    def free(self) -> list[str]:
        """The distributions no statement gives: the ones the combinations vary."""
        return [d for d in (self.combinations[0] if self.combinations else {}) if d not in self.stated]

    def target(self, name: str, version: str) -> str:
        """The --target that gives `name` at `version`: the source tree the run imports, else
        the installed copy, else the release."""
        if name in self.source_dirs:
            return self.source_dirs[name]
        return name if name in self.installed else f"{name}=={version}"

    def targets(self, combo: dict[str, str]) -> list[str]:
        """A combination as --target arguments."""
        return [self.target(n, v) for n, v in combo.items()]

    def to_json(self) -> dict[str, object]:
        """config.release_basis without each combination's verdict (scan.py adds them)."""
        return {"stated": self.stated, "free": self.free, "how": HOW}


def plan(launch: LaunchConfig) -> Plan | None:
    """The combinations to judge `launch` on; None where every distribution of its stack is stated
    or installed (the run is judged on those, as before)."""
    stack = launch.stack.distributions
    stated: dict[str, str] = {}
    installed: set[str] = set()
    for name in stack:
        version = launch.pins.get(name) or _installed(name)
        if version:
            stated[name] = version
            installed |= {name} if name not in launch.pins else set()
    if all(name in stated for name in stack):
        return None
    covered = launch.stack.covered_releases
    out = Plan(stated, installed=installed, source_dirs={n: str(p) for n, p in launch.source_dirs.items()})
    narrowed = {name: [v for v in versions if _can_run(launch, name, v)] for name, versions in covered.items()}
    for name in stack:
        if name not in stated and covered.get(name) and not narrowed.get(name):
            raise InputError(launch.path, f"which {name} does this run use? the script rules out every release "
                                          f"rules/ verifies ({covered[name][0]}-{covered[name][-1]}): "
                                          f"{_narrowing(launch, name)}; pass --target {name}==VERSION")
    covered = narrowed
    for newest in (True, False):
        combo = _choose(stack, out, covered, newest, launch.path)
        if combo not in out.combinations:
            out.combinations.append(combo)
    return out


def _can_run(launch: LaunchConfig, name: str, version: str) -> bool:
    """Whether the script can run on release `version` of distribution `name`, as far as it says:
    inside the bounds its comments state, and (Hydra) without overriding a key the release lacks."""
    try:
        if name in launch.bounds and not SpecifierSet(launch.bounds[name]).contains(version, prereleases=True):
            return False
    except InvalidSpecifier:
        pass  # prose that only looks like a bound states nothing
    if launch.style != "hydra":
        return True
    for framework in launch.stack.chain:
        if framework.distribution != name:
            continue
        for arg in rulebook.load(framework.name).data.get("arg", []):
            if "absent" not in arg or not rulebook.version_in(version, arg.get("versions", "*")):
                continue
            given = [launch.flags[k] for k in [arg["key"], *arg.get("aliases", [])] if k in launch.flags]
            if any(not flag.spelling.startswith("+") for flag in given):
                return False
    return True


def _narrowing(launch: LaunchConfig, name: str) -> str:
    """What the script says that narrows `name`'s releases, in words."""
    said = [f"a comment says {name}{launch.bounds[name]}"] if name in launch.bounds else []
    return "; ".join(said or ["it overrides a key those releases lack (Hydra refuses it without `+`)"])


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _choose(stack: list[str], given: Plan, covered: dict[str, list[str]],
            newest: bool, path: str) -> dict[str, str]:
    """One combination: stated releases as stated, each free one the newest (or oldest) verified
    release compatible with those chosen before it, outermost first."""
    stated = given.stated
    chosen: dict[str, str] = {}
    needs: list[Requirement] = []
    for name in stack:
        if name in stated:
            candidates = [stated[name]]
        else:
            candidates = sorted(covered.get(name, []), key=Version, reverse=newest)
        for version in candidates:
            if not _admitted(name, version, needs) or not _takes_calls(given, name, version, chosen, path):
                continue
            own = requirements(_release(given, name, version, path), stack)
            if name in stated or all(_admitted(n, v, own) for n, v in {**chosen, **stated}.items()):
                chosen[name] = version
                needs += own
                break
        else:
            wants = ", ".join(f"{r.name}{r.specifier}" for r in needs if canonicalize_name(r.name) == name)
            verified = covered.get(name, [])
            span = f"{verified[0]}-{verified[-1]}" if verified else "none"
            raise InputError(path, f"which {name} does this run use? no release rules/ verifies "
                                   f"({span}) is compatible with {_words({**chosen, **stated})}"
                                   f"{f' ({wants})' if wants else ''}; pass --target {name}==VERSION "
                                   f"or write `# {name}==VERSION` in the script")
    return chosen


def _release(given: Plan, name: str, version: str, path: str) -> SourceSet:
    """The release a combination takes; one chosen here (not stated) that the package index lacks
    raises ReleaseUnavailable naming the step that gives it: the tree it ships in where the rules
    say one does ([source_tree]), else a release the index has."""
    try:
        return resolve(given.target(name, version))
    except NoSuchRelease:
        if name in given.stated:
            raise  # the script's own statement names a release that does not exist: bad input
        tree = next((t for f in frameworks() if f.distribution == name
                     if (t := rulebook.load(f.name).section("source_tree"))), None)
        what = (f"which {name} does this run use? rules/ verify {name}=={version}, which the package "
                "index does not have")
        if tree:
            what += f", and no {tree['dir']}/ is in a checkout around the entry script"
            decide = (f"--target PATH/{tree['dir']} (the {tree['dir']}/ of the checkout the run imports; "
                      "scanning the script inside its checkout finds it)")
        else:
            decide = f"--target {name}==VERSION (a release the package index has)"
        raise ReleaseUnavailable(path, what, decide) from None


def _takes_calls(given: Plan, name: str, version: str, chosen: dict[str, str], path: str) -> bool:
    """Whether release `version` of `name` can take the calls the frameworks already chosen (or
    stated: a checkout) make into it ([[call_fit]], config.call_fit)."""
    picked = {**chosen, **given.stated}
    for framework in frameworks():
        caller = framework.distribution
        if caller is None or caller not in picked or caller == name:
            continue
        for entry in rulebook.load(framework.name).data.get("call_fit", []):
            if entry["callee"] == name and not call_fit.fits(
                    entry, _release(given, caller, picked[caller], path), _release(given, name, version, path)):
                return False
    return True


def _admitted(name: str, version: str, needs: Iterable[Requirement]) -> bool:
    try:
        v = Version(version)
    except InvalidVersion:
        return True  # a stated build the specifiers cannot read: the statement decides
    return all(r.specifier.contains(v, prereleases=True) for r in needs
               if canonicalize_name(r.name) == name)


def requirements(src: SourceSet, names: Iterable[str]) -> list[Requirement]:
    """`src`'s Requires-Dist on the distributions `names`, under any of its extras (ms-swift
    states megatron-core under its `megatron` extra, which a megatron run installs)."""
    wanted = {canonicalize_name(n) for n in names}
    meta = _metadata(src)
    if meta is None:
        return []
    extras = [""] + list(meta.get_all("Provides-Extra") or [])
    out = []
    for line in meta.get_all("Requires-Dist") or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) not in wanted:
            continue
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras):
            out.append(req)
    return out


def _metadata(src: SourceSet) -> email.message.Message | None:
    """The release's core metadata: an installed distribution's own, else the unpacked wheel's
    dist-info or the sdist's PKG-INFO."""
    if src.kind == "installed":
        return importlib.metadata.distribution(src.name).metadata  # type: ignore[return-value]
    root = src.root
    infos = sorted(root.glob("*.dist-info/METADATA")) + [root / "PKG-INFO", root.parent / "PKG-INFO"]
    for info in infos:
        if info.is_file():
            return email.parser.Parser().parsestr(info.read_text(encoding="utf-8", errors="replace"))
    return _pyproject_metadata(root / "pyproject.toml") if src.kind == "dir" else None


def _pyproject_metadata(pyproject: Path) -> email.message.Message | None:
    """A source tree's `[project] dependencies` (PEP 621) as Requires-Dist: what `pip install`
    of the tree requires (ROLL's mcore_adapter/ states megatron-core>=0.15.0,<0.19.0 there)."""
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    if not isinstance(project, dict) or not isinstance(project.get("dependencies"), list):
        return None
    meta = email.message.Message()
    for requirement in project["dependencies"]:
        meta["Requires-Dist"] = str(requirement)
    return meta


def _words(releases: dict[str, str]) -> str:
    return " + ".join(f"{n} {v}" for n, v in releases.items()) or "nothing stated"

