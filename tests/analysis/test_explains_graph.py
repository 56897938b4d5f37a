"""The explains relation over every committed recording: one root per chain, no cycle.

A finding that explains another while that one explains it back (seen between a crash and a
rank's end, review h43 item 3) leaves the grouping no root to lead: the headline then names a
consequence. Over every recording under tests/record_fixtures and tests/waitfor_cases, the
relation (analysis.causes.explains) must be acyclic and the finding the headline says must be
explained by no other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from auditor import cli
from auditor.analysis.causes import explains, headline_of

TESTS = Path(__file__).parents[1]
RECORDINGS = sorted(d for base in ("record_fixtures", "waitfor_cases")
                    for d in (TESTS / base).iterdir() if any(d.glob("rank-*.jsonl")))


def _edges(findings: list[dict[str, Any]]) -> dict[int, set[int]]:
    return {i: {j for j, g in enumerate(findings) if j != i and g["kind"] in explains(f)}
            for i, f in enumerate(findings)}


def _cycle(edges: dict[int, set[int]]) -> list[int] | None:
    """A path that comes back to its start, else None."""
    state: dict[int, int] = {}  # 1: on the path, 2: done

    def visit(i: int, path: list[int]) -> list[int] | None:
        state[i] = 1
        for j in edges[i]:
            if state.get(j) == 1:
                return [*path, i, j]
            if j not in state and (found := visit(j, [*path, i])) is not None:
                return found
        state[i] = 2
        return None

    return next((c for i in edges if i not in state and (c := visit(i, [])) is not None), None)


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_the_explains_relation_is_acyclic_and_the_headline_leads(recording: Path,
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    cli.main(["report", "--trace", str(recording), "--format", "json", "-o", str(out)])
    doc = json.loads(out.read_text())
    findings = doc["findings"]
    edges = _edges(findings)
    cycle = _cycle(edges)
    assert cycle is None, [findings[i]["kind"] for i in cycle]
    head = doc["verdict"]["headline"]
    said = [i for i, f in enumerate(findings) if f["severity"] == "error"
            and headline_of(f).removeprefix("CRASHED: ") in head]
    for i in said:
        by = [findings[j]["kind"] for j in edges if i in edges[j]]
        assert not by, f"{findings[i]['kind']} leads the headline but {by} explain(s) it"
