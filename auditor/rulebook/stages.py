"""The rules of every framework, filtered to the versions in use and grouped into stages.

Which [[arg]]/[[rule]]/[[check]] entries apply depends on each framework's version (and, for a
rule with a `torch` specifier, on torch's release: code that branches on it); an entry
that exists for some version but admits none in use is kept as `uncovered`, so that what it
would decide is reported unknown instead of silently skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.errors import InputError
from auditor.rulebook import checkout, files
from auditor.rulebook.frameworks import frameworks, launched_by, versioned


@dataclass(frozen=True)
class Stage:
    name: str
    order: int
    framework: str
    launchers: tuple[str, ...] | None
    flags: bool
    about: str
    # the front ends whose parser, read from the training script, makes the stage run whatever
    # the script's name (`front_ends`; LaunchConfig.builds_parser)
    front_ends: tuple[str, ...] = ()
    # the front ends, by the `style` a [[swift_script]] gives its entry, whose own argparse the
    # stage stands for (`styles`; LaunchConfig.style): Megatron-Bridge's generate programs
    styles: tuple[str, ...] = ()

    def runs_for(self, launcher: str, builds_parser: str = "", style: str = "") -> bool:
        return (self.launchers is None or launched_by(launcher, self.launchers)
                or builds_parser in self.front_ends or style in self.styles)


@dataclass(frozen=True)
class Entry:
    """One [[arg]], [[rule]] or [[check]] entry, resolved for the framework version in use."""

    table: str
    id: str
    framework: str
    stage: str
    data: dict[str, Any] = field(repr=False)
    version: str | None
    read: str
    checkout: Path | None = None  # the source checkout its code was confirmed in (rulebook.checkout)

    @property
    def key(self) -> str:
        return self.data.get("key", "")

    def source_ref(self) -> str:
        src = self.data.get("source", "")
        if not src or not self.read or not re.search(r":\d+$", src):
            return f"{self.framework}: {src}" if src else self.framework
        if self.checkout is not None:
            path = src.rpartition(":")[0]
            named = f"{self.framework} {self.version}" if self.version else self.framework
            return f"{named}: {path} of the checkout {self.checkout}"
        if self.version and self.version != self.read:
            path, _, line = src.rpartition(":")
            return f"{self.framework} {self.version}: {path} (line {line} as read in {self.read})"
        return f"{self.framework} {self.read}: {src}"


@dataclass
class RuleBook:
    """All frameworks' rules for the versions in use: stages in order and their entries."""

    stages: list[Stage]
    entries: dict[str, list[Entry]]  # stage name -> entries in file order
    # Entry ids that exist for some version but admit none of the versions in use:
    # id -> (table, its variants).
    uncovered: dict[str, tuple[str, list[dict[str, Any]]]]
    verified: dict[str, list[str]]
    versions: dict[str, str | None]  # framework -> the version its rules were selected for
    # framework -> the checkout of its version whose code confirmed its entries (rulebook.checkout)
    confirmed_in: dict[str, Path] = field(default_factory=dict)
    # the frameworks no release selects whose entries only the code of a checkout confirms
    from_checkout: frozenset[str] = frozenset()


def load_rulebook(versions: dict[str, str | None], directory: Path | None = None,
                  checkouts: dict[str, Path] | None = None) -> RuleBook:
    """`versions`: distribution name -> version. A framework's rules follow the distribution its
    `[framework]` table names: Megatron-LM's front end ships inside megatron-core. `checkouts`:
    framework -> the source checkout the run reads; where it is the version in use and that
    version is not verified, the entries its code confirms apply (rulebook.checkout)."""
    stages: list[Stage] = []
    entries: dict[str, list[Entry]] = {}
    uncovered: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    verified: dict[str, list[str]] = {}
    framework_versions: dict[str, str | None] = {}
    confirmed_in: dict[str, Path] = {}
    from_checkout: set[str] = set()
    for framework in versioned(directory):
        fw = framework.name
        version = framework_versions[fw] = versions.get(str(framework.distribution))
        rs = files.load(fw, version, directory)
        verified[fw] = list(framework.verified)
        for s in rs.data.get("stage", []):
            launchers = s.get("launchers")
            stages.append(Stage(s["name"], int(s["order"]), fw,
                                tuple(launchers) if launchers is not None else None,
                                bool(s.get("flags", False)), s.get("about", ""),
                                tuple(s.get("front_ends", ())), tuple(s.get("styles", ()))))
        root = (checkouts or {}).get(fw)
        if (root is None or version is None or version in framework.verified
                or not checkout.is_release(str(framework.distribution), root, version)):
            root = None
        else:
            confirmed_in[fw] = root
        for table in ("arg", "rule", "check"):
            admitted = rs.table(table) if root is None else _confirmed(table, rs.data.get(table, []), root)
            _admit(table, rs, admitted, versions.get("torch"), root, entries, uncovered)
    # A front end no release selects (rules/nemo.toml: its settings come from the training script's
    # calls, config/lightning_entry.py) still names its stage, so that its runs have a front end.
    # One whose code is read from its checkout ([checkout], rules/slime.toml) has its entries
    # where that code has them; without a checkout, none: what they decide is unknown.
    for framework in frameworks(directory):
        if framework.distribution is None:
            rs = files.load(framework.name, None, directory)
            stages.extend(Stage(s["name"], int(s["order"]), framework.name, tuple(s.get("launchers", ())),
                                bool(s.get("flags", False)), s.get("about", ""))
                          for s in rs.data.get("stage", []))
            if not rs.section("checkout"):
                continue
            from_checkout.add(framework.name)
            root = (checkouts or {}).get(framework.name)
            if root is not None:
                confirmed_in[framework.name] = root
            for table in ("arg", "rule", "check"):
                admitted = [] if root is None else _confirmed(table, rs.data.get(table, []), root)
                _admit(table, rs, admitted, versions.get("torch"), root, entries, uncovered)
    # An id is uncovered only when none of its variants was admitted.
    admitted_ids = {e.id for es in entries.values() for e in es}
    uncovered = {k: v for k, v in uncovered.items() if k not in admitted_ids}
    stages.sort(key=lambda s: s.order)
    known_stages = {s.name for s in stages}
    for name in list(entries) + [raws[0]["stage"] for _, raws in uncovered.values()]:
        if name not in known_stages:
            raise InputError("rules", f"an entry refers to the undeclared stage {name!r}")
    return RuleBook(stages, entries, uncovered, verified, framework_versions, confirmed_in,
                    frozenset(from_checkout))


def _admit(table: str, rs: files.RuleSet, admitted: list[dict[str, Any]], torch: str | None,
           root: Path | None, entries: dict[str, list[Entry]],
           uncovered: dict[str, tuple[str, list[dict[str, Any]]]]) -> None:
    """The `table` entries of `rs` that `admitted` holds (and torch's release admits) join
    `entries`; the others `uncovered`. `root`: the checkout whose code confirmed them."""
    admitted = [e for e in admitted if _torch_admits(e, torch)]
    read = str(rs.section("framework").get("read", ""))
    for raw in rs.data.get(table, []):
        ident = _entry_id(table, raw)
        if any(e is raw for e in admitted):
            entry = Entry(table, ident, rs.framework, raw["stage"], raw, rs.version,
                          str(raw.get("read", read)), root)
            entries.setdefault(raw["stage"], []).append(entry)
        else:
            uncovered.setdefault(ident, (table, []))[1].append(raw)


def _confirmed(table: str, raws: list[dict[str, Any]], root: Path) -> list[dict[str, Any]]:
    """The variants the checkout's code confirms, whatever their `versions`: the first of each id."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for raw in raws:
        ident = _entry_id(table, raw)
        if ident not in seen and checkout.confirmed(raw, root):
            seen.add(ident)
            out.append(raw)
    return out


def _torch_admits(entry: dict[str, Any], torch: str | None) -> bool:
    """A `torch` specifier admits the torch release in use; an unknown release none (fail closed:
    what the rule decides stays unknown)."""
    spec = entry.get("torch")
    return spec is None or files.version_in(torch, spec) is True


def _entry_id(table: str, raw: dict[str, Any]) -> str:
    """A [[rule]] or [[check]] has an id (rulebook.schema); an [[arg]] is named by its stage and key."""
    return str(raw["id"]) if table != "arg" else f"arg:{raw['stage']}:{raw['key']}"
