"""The P2P API table of `rules/torch.toml`, indexed for matching qualified names."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from auditor.rulebook import files


class Received(Protocol):
    """What a module gets from its package's re-exports (auditor.static.exports.Routes)."""

    def __bool__(self) -> bool: ...

    def qualnames(self) -> set[str]: ...


@dataclass
class ApiTable:
    by_qualname: dict[str, dict[str, Any]] = field(default_factory=dict)
    coalescing: set[str] = field(default_factory=set)
    pg_methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    pg_types: set[str] = field(default_factory=set)
    pg_factories: set[str] = field(default_factory=set)
    digest: str = ""
    _patterns: tuple[re.Pattern[str], re.Pattern[str]] | None = field(default=None, repr=False)

    @property
    def short_names(self) -> set[str]:
        """Last components of every API, coalescing block and method name."""
        names = {q.rsplit(".", 1)[-1] for q in self.by_qualname}
        names |= {q.rsplit(".", 1)[-1] for q in self.coalescing}
        return names | set(self.pg_methods)

    def may_hold_site(self, text: str, received: Received | None = None) -> bool:
        """The cheap test that lets most files skip parsing. A file that gets torch from its
        package (`exports.routes`) needs no torch context of its own, and one that gets an API
        under another name (`from .aliases import snd`) need not name the API either."""
        if received and any(q in self.by_qualname for q in received.qualnames()):
            return True
        if self._patterns is None:
            self._patterns = self._prefilter()
        api, context = self._patterns
        return api.search(text) is not None and (bool(received) or context.search(text) is not None)

    def _prefilter(self) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """Two patterns a file must both match to hold a site: it names an API, and it mentions
        torch.distributed or a process group somewhere (an import, an annotation, a factory)."""
        context = {q.split(".")[1] for q in self.by_qualname if q.count(".") >= 2}
        context |= {t.rsplit(".", 1)[-1] for t in self.pg_types}
        api = "|".join(sorted(map(re.escape, self.short_names)))
        ctx = "|".join(sorted(map(re.escape, context)))
        return re.compile(rf"\b(?:{api})\b"), re.compile(ctx)


def load_table(version: str | None = None) -> ApiTable:
    """torch's P2P API for this torch release."""
    rs = files.load("torch", version)
    table = ApiTable(digest=rs.digest)
    for entry in rs.table("p2p_api"):
        for q in entry["qualnames"]:
            table.by_qualname[q] = entry
    for entry in rs.table("coalescing_context"):
        table.coalescing.update(entry["qualnames"])
    for entry in rs.table("pg_method"):
        table.pg_methods[entry["name"]] = entry
    pg = rs.section("process_group")
    table.pg_types = set(pg.get("types", []))
    table.pg_factories = set(pg.get("factories", []))
    return table


@dataclass(frozen=True)
class BatchWrapper:
    """Where torch issues the batches of the descriptors `modules` make, and the config key
    saying whether it coalesces them (rules/torch.toml [[batch_wrapper]])."""

    modules: tuple[str, ...]
    key: str


def batch_wrappers(version: str | None) -> list[BatchWrapper]:
    """The batch wrappers of this torch release, selected by `versions` like every table."""
    return [BatchWrapper(tuple(w["modules"]), w["key"])
            for w in files.load("torch", version).table("batch_wrapper")]
