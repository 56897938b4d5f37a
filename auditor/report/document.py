"""The scan document of the output contract (docs/schema/scan-document.schema.json): what every
formatter reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from auditor import __version__, jsonio
from auditor.errors import InputError
from auditor.config.runconfig import RunConfig
from auditor.findings import Finding
from auditor.sources import SourceSet
from auditor.static.analyze import FileResults


def build(
    sources: list[SourceSet],
    sites: list[dict[str, Any]],
    analyses: list[FileResults],
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


def load(path: str) -> dict[str, Any]:
    """A scan or sites document from a file, or InputError naming the file and what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    doc = jsonio.loads(text, path)
    if not isinstance(doc, dict) or not isinstance(doc.get("sites"), list) \
            or not isinstance(doc.get("targets"), list):
        raise InputError(path, "not a p2paudit scan or sites document (no 'sites' and 'targets')")
    for part, keys in (("sites", SITE_KEYS), ("targets", TARGET_KEYS)):
        for i, item in enumerate(doc[part]):
            missing = [k for k in keys if k not in item] if isinstance(item, dict) else list(keys)
            if missing:
                raise InputError(path, f"not a document p2paudit wrote: {part[:-1]} #{i} has no "
                                       f"{', '.join(missing)}")
    try:
        RunConfig.from_json(doc.get("config") or {})
    except InputError as exc:
        raise InputError(path, f"{exc.subject} {exc.cause}") from None
    return doc


# What every site and target of a document holds (docs/schema/scan-document.schema.json
# `required`; tests/hostile/test_document_inputs.py keeps the two the same): what the readers
# of a loaded document may index without asking.
SITE_KEYS = ("id", "package", "path", "line", "function", "api", "batched", "group")
TARGET_KEYS = ("name", "version", "source")
