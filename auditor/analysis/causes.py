"""Which findings are causes and which are consequences of another: decided here, once.

A cause is a finding the user acts on at its own line; a consequence is a finding that another
finding of the same run explains (a rules check's `explains` list, carried in its detail, or
`OWN_EXPLAINS` for the findings the analysis makes itself). The verdict's headline names the first
error cause, and every format shows consequences under their cause, never as findings of their
own, so one cause is one ERROR however many mechanisms it sets off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEVERITY_ORDER = ("error", "warning", "info")

# The analysis's own findings (analysis/batching.py): pipeline ops that run unbatched open a
# 2-rank communicator per pair beside the pipeline group's (split-communicators), each created
# lazily inside its first op (lazy-init-unbounded says that of every communicator). A recorded
# run's count mismatch or wait-for cycle (analysis/runfindings.py) leaves ranks stopped inside an
# op; a count explains the cycle only where its unmatched op is a link of it (runfindings says).
OWN_EXPLAINS: dict[str, tuple[str, ...]] = {
    "unbatched-contradiction": ("split-communicators", "lazy-init-unbounded"),
    "p2p-count-mismatch": ("run-stopped-in-op",),
    "wait-for-cycle": ("run-stopped-in-op",),
}


# Findings that the command bash runs is not the command the scan read (a line that lost its
# `\`): every other finding is of the command as read, which never runs as read, so these come
# first of all causes of their severity, before start-up failures of the command as read.
COMMAND_KINDS = ("launch.broken-continuation",)

# Among causes of one severity after start-up failures, these come first: a site that fired
# and the scan did not predict, an unscanned P2P call (the analysis itself missed something).
FIRST_KINDS = ("static-miss", "unscanned-p2p")


@dataclass(frozen=True)
class Cause:
    """A root finding (index into the document's findings) and those it explains, transitively."""

    index: int
    severity: str  # the gravest of the group: a warning that explains an error is an error cause
    consequences: tuple[int, ...]
    startup: bool  # the run stops before its schedule (a config check that holds)

    def to_json(self, findings: list[dict[str, Any]]) -> dict[str, Any]:
        root = findings[self.index]
        return {"kind": root["kind"], "severity": self.severity, "where": root.get("where", ""),
                "headline": headline_of(root), "fix": root.get("fix", ""),
                "startup": self.startup,
                "consequences": [findings[i]["kind"] for i in self.consequences]}


def explains(finding: dict[str, Any]) -> tuple[str, ...]:
    """What the finding explains: its detail's `explains` (a rule's, or what its run adds),
    then what its kind always explains."""
    detail = finding.get("detail") or {}
    return tuple(dict.fromkeys([*(detail.get("explains") or ()), *OWN_EXPLAINS.get(finding["kind"], ())]))


def headline_of(finding: dict[str, Any]) -> str:
    """The cause chain in one sentence: the rule's own `headline`, else the message's first
    sentence."""
    detail = finding.get("detail") or {}
    return detail.get("headline") or first_sentence(finding["message"])


def first_sentence(text: str) -> str:
    """A message's first sentence, without its full stop: what a headline quotes of it."""
    return text.split(". ")[0].rstrip(".")


def quoted(headline: str, limit: int = 160) -> str:
    """A headline's first sentence, cut to `limit` characters: what another headline quotes of it
    (the verdicts of other releases or setting values)."""
    first = first_sentence(headline)
    return first if len(first) <= limit else first[:limit - 3].rstrip() + "..."


def is_startup(finding: dict[str, Any]) -> bool:
    """A config check that holds is a start-up failure: megatron or the trainer rejects the run
    before the schedule (simulate's plan reads the same category)."""
    return (finding.get("severity") == "error"
            and (finding.get("detail") or {}).get("category") == "config")


def group(findings: list[dict[str, Any]]) -> list[Cause]:
    """The causes of a document's findings, gravest first (a command that does not run as read,
    then start-up failures, before the rest of their severity), each with every finding it explains directly or through another."""
    by_kind: dict[str, list[int]] = {}
    for i, f in enumerate(findings):
        by_kind.setdefault(f["kind"], []).append(i)
    explained_by: dict[int, set[int]] = {i: set() for i in range(len(findings))}
    for i, f in enumerate(findings):
        for kind in explains(f):
            for j in by_kind.get(kind, ()):
                if j != i:
                    explained_by[j].add(i)
    roots = [i for i, by in explained_by.items() if not by]
    taken: set[int] = set()
    causes = []
    for root in roots + [i for i in range(len(findings)) if explained_by[i]]:
        if root in taken:  # a consequence, or a finding in a cycle already reached
            continue
        members = [i for i in _reach(root, findings, by_kind) if i != root and i not in taken]
        taken |= {root, *members}
        severity = min((findings[i]["severity"] for i in [root, *members]),
                       key=SEVERITY_ORDER.index)
        causes.append(Cause(root, severity, tuple(members), is_startup(findings[root])))
    causes.sort(key=lambda c: (SEVERITY_ORDER.index(c.severity),
                               findings[c.index]["kind"] not in COMMAND_KINDS, not c.startup,
                               findings[c.index]["kind"] not in FIRST_KINDS, not c.consequences,
                               c.index))
    return causes


def _reach(root: int, findings: list[dict[str, Any]], by_kind: dict[str, list[int]]) -> list[int]:
    """`root` and what it explains, directly or through another, in the order its rule lists."""
    seen = [root]
    at = 0
    while at < len(seen):
        for kind in explains(findings[seen[at]]):
            seen += [j for j in by_kind.get(kind, ()) if j not in seen]
        at += 1
    return seen
