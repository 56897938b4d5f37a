"""The CI gate: does a new release add a reachable unbatched P2P site or a new contradiction?

A baseline is a scan document of the same launch script at a known-good release. Sites are
compared per family (stable id without its ordinal: one API in one function) and counted, so
three new unbatched copies in a function are three findings even when the copies shift the
ordinals of the sites already there; the findings point at the sites whose ids are new first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.analysis.diff import diff, family
from auditor.errors import EXIT_FINDINGS, EXIT_OK, InputError
from auditor.findings import Finding
from auditor.sources import target_label


def problems(site: dict[str, Any]) -> list[str]:
    """What makes a site fail the gate: a contradiction, or an unbatched op that can run."""
    out = []
    if site.get("verdict") == "contradiction":
        out.append("contradiction")
    if site.get("reachable") == "yes" and not site.get("batched"):
        out.append("reachable unbatched")
    return out


@dataclass
class GateResult:
    new: list[Finding]  # each fails the gate
    fixed: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    diff: dict[str, Any] = field(default_factory=dict)
    known: int = 0  # problem sites already in the baseline, still there

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.new else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {"passed": not self.new, "new": [f.to_json() for f in self.new],
                "fixed": [f.to_json() for f in self.fixed],
                "notes": [f.to_json() for f in self.notes], "known": self.known,
                "diff": self.diff}


def check_scan(doc: Any, name: str) -> None:
    """InputError unless `doc` is a scan document (sites with reachability and verdicts)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("sites"), list):
        raise InputError(name, "not a p2paudit scan document (no 'sites' list)")
    if any("reachable" not in s or "verdict" not in s for s in doc["sites"]):
        raise InputError(name, "a site inventory, not a scan: its sites have no 'reachable' or "
                               "'verdict'; write it with `p2paudit scan --config ... --format json`")


def gate(baseline: dict[str, Any], new: dict[str, Any]) -> GateResult:
    before: dict[str, list[dict[str, Any]]] = {}
    after: dict[str, list[dict[str, Any]]] = {}
    for s in baseline["sites"]:
        if problems(s):
            before.setdefault(family(s["id"]), []).append(s)
    for s in new["sites"]:
        if problems(s):
            after.setdefault(family(s["id"]), []).append(s)
    label = ", ".join(target_label(t) for t in new.get("targets", []))
    result = GateResult([], diff=diff(baseline, new))
    for fam in sorted(before.keys() | after.keys()):
        old, now = before.get(fam, []), after.get(fam, [])
        result.known += min(len(old), len(now))
        if len(now) > len(old):
            old_ids = {s["id"] for s in old}
            fresh = sorted(now, key=lambda s: (s["id"] in old_ids, s["line"]))
            for s in fresh[: len(now) - len(old)]:
                result.new.append(_new_finding(s, len(old), len(now), label))
        elif len(old) > len(now):
            first = old[0]
            result.fixed.append(Finding(
                "gate-fixed", "info",
                f"{len(old) - len(now)} fewer problem site(s) in {fam} than in the baseline "
                f"({len(old)} -> {len(now)})",
                site_ids=[s["id"] for s in old], where=f"{first['path']}:{first['line']}"))
    baseline_ids = {s["id"] for s in baseline["sites"]}
    for s in new["sites"]:
        if s["id"] not in baseline_ids and not problems(s) and s.get("reachable") == "unknown":
            result.notes.append(Finding(
                "gate-new-site-unresolved", "info",
                f"new site {s['path']}:{s['line']} {s['api']} in {s['function']} "
                f"({'batched' if s.get('batched') else 'UNBATCHED'}): the scan found no call path "
                "to it from the entry points, so it does not fail the gate; check it by hand or "
                "record a run",
                site_ids=[s["id"]], where=f"{s['path']}:{s['line']}"))
    return result


def _new_finding(s: dict[str, Any], before: int, now: int, label: str) -> Finding:
    what = " and ".join(problems(s))
    path = " -> ".join(s["paths"][0]) if s.get("paths") else s["function"]
    kind = "gate-new-contradiction" if s.get("verdict") == "contradiction" else "gate-new-unbatched"
    why = s.get("unbatched_reason") or ("issued on its own" if not s.get("batched") else "")
    return Finding(
        kind, "error",
        f"new in {label}: {what} site {s['path']}:{s['line']} {s['api']}"
        f"{'(' + s['op'] + ')' if s.get('op') else ''} in {s['function']} ({why}); the baseline "
        f"has {before} such site(s) of this API in this function, this release {now}; "
        f"group: {', '.join(s.get('groups') or [s.get('group', '?')])}; path: {path}",
        fix="batch it (batch_isend_irecv on the pipeline group) or keep the previous release; "
            "if it is intended, regenerate the baseline with p2paudit scan --format json",
        site_ids=[s["id"]], where=f"{s['path']}:{s['line']}",
        detail={"family": family(s["id"]), "baseline_count": before, "count": now,
                "paths": s.get("paths", [])})
