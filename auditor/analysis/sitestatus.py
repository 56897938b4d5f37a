"""A scanned site's status as the document gives it (the schema's `site`): whether a call path
reaches it (`reachable`, static.interp.reach) and its verdict (`verdict.site_verdict`), typed, so
readers test a named state instead of comparing the schema's strings, which are read here only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

Reach = Literal["yes", "no", "unknown"]
SiteVerdict = Literal["contradiction", "ok", "unknown", "unreachable"]


@dataclass(frozen=True)
class SiteStatus:
    """`reachable` and `verdict` None: the site was inventoried, not scanned."""

    reachable: Reach | None
    verdict: SiteVerdict | None
    on_path: bool  # a call path from an entry point reaches it (`paths`)
    undecided: str  # why a reached site's verdict is unknown

    @classmethod
    def of(cls, site: Mapping[str, Any]) -> SiteStatus:
        return cls(cast("Reach | None", site.get("reachable")),
                   cast("SiteVerdict | None", site.get("verdict")),
                   bool(site.get("paths")), site.get("undecided") or "")

    @property
    def reached(self) -> bool:
        return self.reachable == "yes"

    @property
    def unreachable(self) -> bool:
        """No call path can reach it: proved, not merely not found."""
        return self.reachable == "no"

    @property
    def reach_unknown(self) -> bool:
        return self.reachable == "unknown"

    @property
    def contradiction(self) -> bool:
        return self.verdict == "contradiction"

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @property
    def verdict_unknown(self) -> bool:
        return self.verdict == "unknown"

    @property
    def quiet(self) -> bool:
        """Not analysed: no call path from the entry points reaches it and nothing else is known
        of it (the run's verdict counts these apart, `RunVerdict.not_analysed`)."""
        return self.verdict_unknown and not self.on_path and not self.undecided
