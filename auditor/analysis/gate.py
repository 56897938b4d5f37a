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
from auditor.analysis.sitestatus import SiteStatus
from auditor.analysis.verdict import judge
from auditor.errors import EXIT_FINDINGS, EXIT_OK, InputError
from auditor.findings import Finding
from auditor.sources import target_label


def problems(site: dict[str, Any]) -> list[str]:
    """What makes a site fail the gate: a contradiction, or an unbatched op that can run."""
    out = []
    status = SiteStatus.of(site)
    if status.contradiction:
        out.append("contradiction")
    if status.reached and not site.get("batched"):
        out.append("reachable unbatched")
    return out


@dataclass
class GateResult:
    new: list[Finding]  # each fails the gate
    fixed: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    diff: dict[str, Any] = field(default_factory=dict)
    known: int = 0  # problem sites already in the baseline, still there
    stops: str = ""  # a start-up error the baseline shares: the run does not start in either

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.new else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {"passed": not self.new, "new": [f.to_json() for f in self.new],
                "fixed": [f.to_json() for f in self.fixed],
                "notes": [f.to_json() for f in self.notes], "known": self.known,
                "diff": self.diff}


SITE_KEYS = ("id", "path", "line", "api", "function", "batched", "reachable", "verdict")


def check_scan(doc: Any, name: str) -> None:
    """InputError unless `doc` is a scan document (sites with reachability and verdicts)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("sites"), list):
        raise InputError(name, "not a p2paudit scan document (no 'sites' list)")
    if any(isinstance(s, dict) and ("reachable" not in s or "verdict" not in s) and "id" in s
           for s in doc["sites"]):
        raise InputError(name, "a site inventory, not a scan: its sites have no 'reachable' or "
                               "'verdict'; write it with `p2paudit scan --config ... --format json`")
    for i, s in enumerate(doc["sites"]):
        missing = [k for k in SITE_KEYS if not isinstance(s, dict) or k not in s]
        if missing:
            raise InputError(name, f"site #{i} has no {', '.join(missing)}: not a scan document "
                                   "p2paudit wrote (regenerate it with `p2paudit scan --format json`)")


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
    decided = judge(new)
    if decided.status == "inconclusive" or decided.undecided:
        result.new.append(Finding(
            "gate-inconclusive", "error",
            f"the scan of {label} is inconclusive, so the gate cannot pass: {decided.headline}",
            fix="; ".join(dict.fromkeys(u.decide for u in decided.undecided)),
            detail={"undecided": [{"what": u.what, "decide": u.decide} for u in decided.undecided]}))
    result.new += _lost(baseline, new, label)
    known_stops = {c["headline"] for c in _startup_errors(judge(baseline).causes)}
    for cause in _startup_errors(decided.causes):
        if cause["headline"] in known_stops:
            result.stops = result.stops or cause["headline"]
            continue
        result.new.append(Finding(
            "gate-does-not-start", "error",
            f"with {label} the run does not start, and with the baseline's releases it did "
            f"not stop there: {cause['headline']}", fix=cause.get("fix") or "",
            where=cause.get("where") or ""))
    for fam in sorted(before.keys() | after.keys()):
        old, now = before.get(fam, []), after.get(fam, [])
        result.known += min(len(old), len(now))
        if len(now) > len(old):
            old_ids = {s["id"] for s in old}
            fresh = sorted(now, key=lambda s: (s["id"] in old_ids, s["line"]))
            for s in fresh[: len(now) - len(old)]:
                result.new.append(_new_finding(s, len(old), len(now), label))
        elif len(old) > len(now):
            result_list, finding = _fewer(fam, old, now, baseline, new, bool(decided.undecided))
            getattr(result, result_list).append(finding)
    baseline_ids = {s["id"] for s in baseline["sites"]}
    for s in new["sites"]:
        if s["id"] not in baseline_ids and not problems(s) and SiteStatus.of(s).reach_unknown:
            result.notes.append(Finding(
                "gate-new-site-unresolved", "info",
                f"new site {s['path']}:{s['line']} {s['api']} in {s['function']} "
                f"({'batched' if s.get('batched') else 'UNBATCHED'}): the scan found no call path "
                "to it from the entry points, so it does not fail the gate; check it by hand or "
                "record a run",
                site_ids=[s["id"]], where=f"{s['path']}:{s['line']}"))
    return result


def _startup_errors(causes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The causes (verdict.causes) that stop the run before its schedule: start-up errors."""
    return [c for c in causes if c.get("startup") and c.get("severity") == "error"]


def _lost(baseline: dict[str, Any], new: dict[str, Any], label: str) -> list[Finding]:
    """Baseline families with a reachable site whose every site in the new scan is `unknown`:
    the analysis lost them (an entry that no longer resolves, a call it cannot follow), which
    says nothing about whether they still run."""
    reached = {family(s["id"]) for s in baseline["sites"] if SiteStatus.of(s).reached}
    now: dict[str, list[dict[str, Any]]] = {}
    for s in new["sites"]:
        now.setdefault(family(s["id"]), []).append(s)
    out = []
    for fam in sorted(reached):
        sites = now.get(fam)
        if sites and all(SiteStatus.of(s).reach_unknown for s in sites):
            first = sites[0]
            out.append(Finding(
                "gate-lost-site", "error",
                f"{fam} is reachable in the baseline, but in {label} the analysis found no call "
                f"path to it ({first.get('reason') or 'reachability unknown'}): the gate cannot "
                "say whether it still runs, or how",
                fix="pass --entry for the training step of this release, or record a run",
                site_ids=[s["id"] for s in sites], where=f"{first['path']}:{first['line']}"))
    return out


def _fewer(fam: str, old: list[dict[str, Any]], now: list[dict[str, Any]],
           baseline: dict[str, Any], new: dict[str, Any], undecided: bool) -> tuple[str, Finding]:
    """("fixed", ...) only when the scan decided everything and the code explains the drop."""
    first = old[0]
    where, ids = f"{first['path']}:{first['line']}", [s["id"] for s in old]
    counts = f"{len(old) - len(now)} fewer problem site(s) in {fam} than in the baseline " \
             f"({len(old)} -> {len(now)})"
    why = "" if undecided else _explained(fam, baseline, new)
    if why:
        return "fixed", Finding("gate-fixed", "info", f"{counts}: {why}", site_ids=ids, where=where)
    return "notes", Finding(
        "gate-unexplained", "info",
        f"{counts}, but neither a removed site, a guard nor batching explains it, or the scan is "
        "inconclusive: not counted as fixed", site_ids=ids, where=where)


def _explained(fam: str, baseline: dict[str, Any], new: dict[str, Any]) -> str:
    """Why problem sites are gone: removed from the code, ruled out by a guard, or batched now;
    "" when nothing the scan knows explains it."""
    sites = [s for s in new["sites"] if family(s["id"]) == fam]
    had = sum(1 for s in baseline["sites"] if family(s["id"]) == fam)
    if len(sites) < had:
        return f"{had - len(sites)} site(s) of it removed from the code"
    reasons = sorted({s.get("reason") or "" for s in sites if SiteStatus.of(s).unreachable} - {""})
    if reasons:
        return f"unreachable: {reasons[0]}"
    return "they run batched now" if all(SiteStatus.of(s).ok for s in sites) else ""


def _new_finding(s: dict[str, Any], before: int, now: int, label: str) -> Finding:
    what = " and ".join(problems(s))
    path = " -> ".join(s["paths"][0]) if s.get("paths") else s["function"]
    kind = "gate-new-contradiction" if SiteStatus.of(s).contradiction else "gate-new-unbatched"
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
