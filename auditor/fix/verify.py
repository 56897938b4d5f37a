"""Does a patch do what it says? The patched inputs are scanned again in a temporary copy (the
user's files are never written for this) and each finding of the first scan is matched to the
second's by identity: gone, still there; a finding only the second has is new."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from auditor.analysis import verdict
from auditor.scan import ScanInputs, run_scan

GONE, STILL, NEW = "gone", "still there", "new"


def identity(f: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """What makes two scans' findings the same finding: the kind, the rule or variable, the
    sites; not its line, which a patch moves."""
    detail = f.get("detail") or {}
    return (f["kind"], str(detail.get("rule") or detail.get("variable") or ""),
            tuple(sorted(f.get("site_ids", []))))


@dataclass
class Outcome:
    """The second scan against the first: per finding of the first (by index) gone or still
    there, and the second's findings the first did not have."""

    states: dict[int, str]
    new: list[dict[str, Any]] = field(default_factory=list)
    verdict: dict[str, Any] = field(default_factory=dict)

    def removes(self, indices: list[int]) -> bool:
        """Verified for these findings: each is gone, and nothing new appeared."""
        return not self.new and all(self.states[i] == GONE for i in indices)


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Outcome:
    remaining = [identity(f) for f in after]
    states = {}
    for i, f in enumerate(before):
        key = identity(f)
        states[i] = STILL if key in remaining else GONE
    known = {identity(f) for f in before}
    return Outcome(states, [f for f in after if identity(f) not in known])


def rescan(inputs: ScanInputs, patched: dict[str, str]) -> dict[str, Any]:
    """The scan of `inputs` with the files of `patched` (path -> text) replaced, run on copies
    in a temporary directory; the document's paths name the user's files again."""
    with tempfile.TemporaryDirectory(prefix="p2paudit-fix-") as tmp:
        moved = {}
        for n, (path, text) in enumerate(patched.items()):
            where = os.path.join(tmp, str(n))
            os.mkdir(where)
            copy = os.path.join(where, os.path.basename(path))
            with open(copy, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            moved[path] = copy
        doc = run_scan(ScanInputs(**{**inputs.__dict__, "progress": False,
                                     "config_path": moved.get(inputs.config_path,
                                                              inputs.config_path)}))
    for f in doc["findings"]:
        for path, copy in moved.items():
            f["where"] = f.get("where", "").replace(copy, path)
            f["message"] = f["message"].replace(copy, path)
    verdict.finish(doc)
    return doc
