"""The scan document of a run that is not scanned, for a decided reason: it trains no pipeline
(`megatron export`, `swift sft`), or its training command could not be followed. The same
contract as a scanned run's (docs/schema/scan-document.schema.json): tools reading `--format json`
get a verdict, the launch as read and its findings, never a fragment."""

from __future__ import annotations

from typing import Any

from auditor.analysis import verdict
from auditor.config.model import LaunchConfig
from auditor.report import document


def unscanned_document(path: str, result: verdict.RunVerdict,
                       launch: LaunchConfig | None = None) -> dict[str, Any]:
    """No target was resolved and no site read: `targets` and `sites` are empty by decision."""
    doc = document.build([], [], [], list(launch.diagnostics) if launch else [])
    doc["launch"] = {"path": path, **({"launcher": launch.launcher, "line": launch.command_line}
                                      if launch else {})}
    doc["verdict"] = result.to_json()
    return doc
