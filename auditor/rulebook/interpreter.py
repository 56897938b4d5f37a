"""What the call-graph interpreter knows about the frameworks, read from `rules/*.toml`.

Entry points are code snippets (a training step as a framework's own loop would run it),
interpreted like any module. Symbols are functions that answer with a configuration value, a
process group or the config object; group names say which parallel dimension a variable holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.rulebook import files
from auditor.rulebook.frameworks import launched_by, versioned


@dataclass
class Rules:
    api_params: dict[str, dict[str, Any]] = field(default_factory=dict)  # api name -> entry
    api_qualnames: dict[str, str] = field(default_factory=dict)  # qualname -> api name
    symbols: dict[str, dict[str, Any]] = field(default_factory=dict)  # function -> symbol
    group_names: dict[str, str] = field(default_factory=dict)  # variable/attribute -> dim
    group_sizes: dict[str, str] = field(default_factory=dict)  # dim -> config key
    config_names: frozenset[str] = frozenset()  # expressions that hold the config object
    world_groups: frozenset[str] = frozenset()  # qualnames of the default/WORLD group


@dataclass
class EntryPoint:
    name: str
    framework: str
    code: str
    about: str = ""
    launchers: list[str] = field(default_factory=list)  # fnmatch patterns; empty: any launcher
    when: str | None = None  # a config expression; False: the entry does not run (scan.py)


def load(versions: dict[str, str | None]) -> tuple[Rules, list[EntryPoint], list[EntryPoint]]:
    """(interpreter rules, entry points bound to launchers, generic entry points). `versions`:
    distribution name -> release. Inner frameworks are read first, so that an outer one (a front
    end patching the one it runs on) has the last word on a name both describe."""
    r = Rules()
    config_names: set[str] = set()
    bound: list[EntryPoint] = []
    generic: list[EntryPoint] = []
    for framework in reversed(versioned()):
        fw = framework.name
        rs = files.load(fw, versions.get(str(framework.distribution)))
        for e in rs.table("p2p_api"):
            r.api_params[e["name"]] = e
            for q in e["qualnames"]:
                r.api_qualnames[q] = e["name"]
        r.world_groups |= frozenset(rs.section("world_group").get("qualnames", []))
        for s in rs.table("symbol"):
            r.symbols[s["function"]] = s
        for g in rs.table("group"):
            r.group_sizes[g["dim"]] = g["size"]
            for n in g["names"]:
                r.group_names[n] = g["dim"]
        config_names |= set(rs.section("config_objects").get("names", []))
        for e in rs.table("entry_point"):
            ep = EntryPoint(e["name"], fw, e["code"], e.get("about", ""), e.get("launchers", []), e.get("when"))
            (bound if ep.launchers else generic).append(ep)
    r.config_names = frozenset(config_names)
    return r, bound, generic


def entries_for(launcher: str, bound: list[EntryPoint], generic: list[EntryPoint]) -> list[EntryPoint]:
    """The entry points of the framework that launches this run (`load`'s bound ones); the
    generic ones, megatron-core's schedule, when none claims the launcher (torchrun
    pretrain_gpt.py, a user's loop)."""
    mine = [e for e in bound if launched_by(launcher, e.launchers)]
    return mine or generic
