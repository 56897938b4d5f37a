"""Reads `rules/<framework>.toml`: the one reader of the rules files.

Rules are data so that supporting a new release is a rules change. Any table entry may carry
`versions = "<PEP 440 specifier>"`; `load(name, version)` keeps only the entries whose range
admits `version` (all of them when the version is unknown and the entry says `unknown = true`,
otherwise entries with a range are dropped for an unknown version; a torch newer than every
release the rules judge is unknown). A file whose tables or keys
rulebook.schema does not allow is refused, so that a typo cannot widen an entry.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from auditor.errors import InputError
from auditor.rulebook.schema import problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@functools.cache
def rules_dir() -> Path:
    """The shipped rules: `auditor/rules` in a wheel, `rules/` beside the package in a checkout.
    Found once per process: the package does not move, and the search resolves `__file__`
    through the file system (a scan asks for the rules tens of thousands of times)."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise InputError("rules", f"no rules directory next to {here}")


@dataclass(frozen=True)
class RuleSet:
    """One framework's rules, filtered to one version."""

    framework: str
    version: str | None
    data: dict[str, Any] = field(repr=False)
    digest: str = ""

    def table(self, name: str) -> list[dict[str, Any]]:
        """Entries of an array-of-tables, those whose `versions` admit this version. A version
        newer than every release of `[framework] releases` (torch's) is one nobody checked the
        open-ended ranges against: it is taken as unknown."""
        version = None if _beyond(self.version, self.section("framework").get("releases")) \
            else self.version
        return [e for e in self.data.get(name, []) if _admits(e, version)]

    def section(self, name: str) -> dict[str, Any]:
        return self.data.get(name, {})


def _admits(entry: dict[str, Any], version: str | None) -> bool:
    spec = entry.get("versions")
    if not spec or spec == "*":
        return True
    if version is None:
        return bool(entry.get("unknown", False))
    try:
        return Version(version) in SpecifierSet(spec, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def _beyond(version: str | None, releases: list[str] | None) -> bool:
    """Whether `version` (its local build tag and pre-release dropped) is newer than them all."""
    if version is None or not releases:
        return False
    try:
        return Version(Version(version).base_version) > max(Version(r) for r in releases)
    except InvalidVersion:
        return False


def names(directory: Path | None = None) -> list[str]:
    """The framework of every rules file in `directory` (the shipped rules by default)."""
    return sorted(p.stem for p in (directory or rules_dir()).glob("*.toml"))


def load(framework: str, version: str | None = None, directory: Path | None = None) -> RuleSet:
    """`framework`'s rules file, its entries filtered to `version`."""
    path = (directory or rules_dir()) / f"{framework}.toml"
    if not path.is_file():
        raise InputError(str(path), f"no rules for framework {framework!r}")
    stat = path.stat()
    data, digest = _parse(str(path), stat.st_mtime_ns, stat.st_size)
    return RuleSet(framework, version, data, digest)


@functools.lru_cache(maxsize=64)
def _parse(path: str, mtime_ns: int, size: int) -> tuple[dict[str, Any], str]:
    """A rules file parsed once per process (per content on disk); callers only read it."""
    raw = Path(path).read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, f"invalid rules file: {exc}") from None
    wrong = problem(data)
    if wrong is None and data["framework"]["name"] != Path(path).stem:
        wrong = f"[framework] name {data['framework']['name']!r} is not the file's name"
    if wrong:
        raise InputError(path, f"invalid rules file: {wrong}")
    return data, hashlib.sha256(raw).hexdigest()[:16]


def version_in(version: str | None, spec: str) -> bool | None:
    """Three-valued: None when the version is unknown."""
    if version is None:
        return None
    return _admits({"versions": spec}, version)
