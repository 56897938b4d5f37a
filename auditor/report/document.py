"""The scan document of the output contract (docs/schema/scan-document.schema.json): what every
formatter reads."""

from __future__ import annotations

from typing import Any

from auditor import __version__
from auditor.findings import Finding
from auditor.sources import SourceSet
from auditor.static.analyze import Analysis


def build(
    sources: list[SourceSet],
    sites: list[dict[str, Any]],
    analyses: list[Analysis],
    findings: list[Finding] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "tool": {"name": "p2paudit", "version": __version__},
        "targets": [s.to_json() for s in sources],
        "config": config or {},
        "sites": sites,
        "findings": [f.to_json() for f in findings or []],
        "files": {
            "total": sum(a.files_total for a in analyses),
            "parsed": sum(a.files_analyzed for a in analyses),
            "cached": sum(a.cache_hits for a in analyses),
            "errors": [
                {"package": s.name, "path": e.path, "cause": e.cause}
                for s, a in zip(sources, analyses)
                for e in a.errors
            ],
        },
    }
