"""What `fix` says: per cause its option and the options it did not take, per finding of the
scan what the patched re-scan found (gone, still there), the findings it added (new: ...), and
each cause's patch as its finding's `patch` in the scan document (which SARIF writes as `fixes`)."""

from __future__ import annotations

import copy
from typing import Any

from auditor.analysis import causes
from auditor.fix.edits import unified
from auditor.fix.plan import FixPlan, Proposal, label, patched_files
from auditor.fix.verify import GONE


def _finding(f: dict[str, Any]) -> str:
    where = f" at {f['where']}" if f.get("where") else ""
    return f"{f['severity'].upper():7} {f['kind']}{where}"


def _proposal(p: Proposal, findings: list[dict[str, Any]]) -> list[str]:
    others = [f"{o.option}: {o.says()}" for o in p.options if o != p.option]
    lines = [f"  {_finding(findings[p.cause.index])}",
             (f"          fix ({p.option.option}{', the default' if p.option.default else ''}): "
              f"{p.option.says()}")]
    if others:
        lines.append(f"          other options (--option NAME): {'; '.join(others)}")
    if p.not_mechanical:
        lines.append(f"          no patch: {p.not_mechanical}")
    elif p.outcome is None:
        lines.append("          not in this patch: its edit collides with another cause's")
    else:
        lines.append(f"          alone: {'verified' if p.verified else 'NOT verified'} "
                     f"({_states(p, findings)})")
    return lines


def _states(p: Proposal, findings: list[dict[str, Any]]) -> str:
    assert p.outcome is not None
    shown = [f"{findings[i]['kind']} {p.outcome.states[i]}"
             for i in (p.cause.index, *p.cause.consequences)]
    shown += [f"new: {f['kind']}" for f in p.outcome.new]
    return ", ".join(shown)


def text(plan: FixPlan) -> str:
    findings = plan.doc["findings"]
    lines = [(f"p2paudit fix {plan.path}: {len(plan.proposals)} cause(s) with a remedy, "
              f"{sum(1 for p in plan.proposals if p.verified)} verified")]
    for p in plan.proposals:
        lines += _proposal(p, findings)
    remedied = {p.cause.index for p in plan.proposals}
    for cause in causes.group(findings):
        if cause.index not in remedied:
            f = findings[cause.index]
            lines += [f"  {_finding(f)}", "          no mechanical remedy: by hand"
                      + (f": {f['fix']}" if f.get("fix") else "")]
    if plan.outcome is None:
        lines.append("no patch to verify")
        return "\n".join(lines) + "\n"
    lines.append("verification: the patched files re-scanned in a temporary copy")
    for cause in causes.group(findings):
        for n, i in enumerate((cause.index, *cause.consequences)):
            lines.append(f"  {plan.outcome.states[i]:12} {'  ' if n else ''}{_finding(findings[i])}")
    lines += [f"  new: {_finding(f)}: {f['message']}" for f in plan.outcome.new]
    after = plan.outcome.verdict
    lines.append(f"after the patch: {after.get('headline', '')}")
    sim = plan.simulation
    if sim.get("simulated"):
        lines.append(f"simulated (p2paudit simulate of the patched copy, {sim['seconds']} s): "
                     f"{sim['headline']}")
    else:
        lines.append(f"not simulated: {sim.get('headline', 'no patch')}")
    lines.append(f"patch: {'verified' if plan.verified else 'NOT verified'}; exit {plan.exit_code}")
    return "\n".join(lines) + "\n"


def attach(plan: FixPlan) -> dict[str, Any]:
    """The scan document with each remedied cause's `patch` on its finding: the option taken,
    its edits (character offsets into the file, and the line), its diff, whether the patch
    verified it, and the re-scan's word on each finding the cause groups. Text, HTML and SARIF
    (`fixes`) show a verified one under the cause."""
    doc = copy.deepcopy(plan.doc)
    findings = doc["findings"]
    for p in plan.proposals:
        in_patch = p.verified and all(e in plan.edits for e in p.edits)
        states = plan.outcome.states if (plan.outcome and in_patch) else {}
        findings[p.cause.index]["patch"] = {
            "option": p.option.option, "says": p.option.says(),
            "options": [{"option": o.option, "says": o.says(), "default": o.default}
                        for o in p.options],
            "verified": bool(in_patch and plan.verified and states.get(p.cause.index) == GONE),
            "checked_by": "re-scan",
            "simulated": bool(in_patch and plan.simulation.get("simulated")),
            "edits": [e.to_json(plan.sources[e.path]) for e in p.edits],
            "diff": "".join(unified(label(path), plan.sources[path], text)
                            for path, text in patched_files(plan.sources, p.edits).items()),
            **({"why_not": p.not_mechanical} if p.not_mechanical else {}),
            "findings": {findings[i]["kind"]: states.get(i, "not checked")
                         for i in (p.cause.index, *p.cause.consequences)},
        }
    return doc
