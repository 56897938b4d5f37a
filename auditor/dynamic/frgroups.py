"""The process groups of a set of Flight Recorder dumps: which global ranks each one holds.

A dump names its ops' peers in group-local ranks, so every op is placed through its group. NCCL
writes each group's ranks in `pg_config`; gloo writes none, and then the members are inferred
from the entries and `pg_status`, and the inference is said in the trace's notes."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from auditor.dynamic.frdump import Dump


@dataclass(frozen=True)
class DumpGroup:
    name: str
    desc: str
    ranks: tuple[int, ...]
    known: bool  # from pg_config, not inferred

    def to_json(self, backend: str) -> dict[str, Any]:
        return {"ranks": list(self.ranks), "size": len(self.ranks), "desc": self.desc,
                "name": self.name, "backend": backend}


def groups_of(dumps: list[Dump], notes: list[str]) -> dict[tuple[int, str], DumpGroup]:
    """(rank, group name) -> the group, from each rank's pg_config; where a backend wrote none
    (gloo), the default group is every dumped rank and another group the dumped ranks that name it
    in an entry or in their `pg_status` (which lists every group a rank enqueued work on)."""
    out: dict[tuple[int, str], DumpGroup] = {}
    for d in dumps:
        for key, info in d.pg_config.items():
            if not isinstance(info, dict) or not str(info.get("name", key)):
                continue
            ranks = _ranks(info.get("ranks"))
            if ranks is None:
                notes.append(f"{d.path.name}: pg_config of group {key!r} has no readable rank list")
                continue
            name = str(info.get("name", key))
            out[(d.rank, name)] = DumpGroup(name, str(info.get("desc", "")), ranks, True)
    users: dict[str, set[int]] = {}
    descs: dict[str, str] = {}
    for d in dumps:
        for e in d.entries:
            name, desc = entry_group(e)
            users.setdefault(name, set()).add(d.rank)
            descs[name] = desc
    for d in dumps:
        for name in d.pg_status:
            if str(name) in users:
                users[str(name)].add(d.rank)
    dumped = tuple(d.rank for d in dumps)
    for name, users_of in sorted(users.items()):
        missing = [r for r in users_of if (r, name) not in out]
        if not missing:
            continue
        if descs[name] == "default_pg":
            members, how = dumped, "every dumped rank"
        else:
            members, how = tuple(sorted(users_of)), "the dumped ranks whose entries or pg_status name it"
        notes.append(f"group {name} ({descs[name] or 'no description'}): no pg_config entry "
                     f"(gloo writes none); its members are taken as {how}: "
                     f"{', '.join(map(str, members))}")
        for r in missing:
            out[(r, name)] = DumpGroup(name, descs[name], members, False)
    return out


def _ranks(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, RecursionError, MemoryError):  # "[[[[..." nested deep
            return None
    if isinstance(value, (list, tuple)) and all(isinstance(r, int) for r in value):
        return tuple(sorted(value))
    return None


def entry_group(entry: dict[str, Any]) -> tuple[str, str]:
    """(name, description) of the group an entry ran on; its `pg_id` where it has no `process_group`."""
    pg = entry.get("process_group")
    if isinstance(pg, (list, tuple)) and len(pg) == 2:
        return str(pg[0]), str(pg[1])
    return str(entry.get("pg_id", "?")), ""
