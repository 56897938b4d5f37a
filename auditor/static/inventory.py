"""Every P2P site of one target: the per-file task of `parsed` run over the whole source tree,
prefiltered, in parallel and cached (`analyze`)."""

from __future__ import annotations

from dataclasses import dataclass

from auditor.sources import SourceSet
from auditor.static import parsed
from auditor.static.analyze import FileResults, analyze
from auditor.static.exports import routes
from auditor.static.sites.sites import Site, table


@dataclass
class Inventory:
    sites: list[Site]
    analysis: FileResults
    source: SourceSet


def inventory(src: SourceSet, jobs: int | None = None, progress: bool = False) -> Inventory:
    """Every site in one target. Files that cannot hold one are skipped unparsed; the others are
    parsed once, for their sites and the IR the call graph reads later."""
    result = analyze(
        src,
        parsed.module_task,
        parsed.task_key(),
        wanted=table().may_hold_site,
        jobs=jobs,
        progress=progress,
        context=routes,
    )
    sites = [Site(**d) for rel in sorted(result.results) for d in result.results[rel]["sites"]]
    return Inventory(sites, result, src)
