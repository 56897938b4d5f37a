"""A finding: something the user should act on, with the fix. Shared by every stage."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass
class Finding:
    kind: str
    severity: str
    message: str
    fix: str = ""
    site_ids: list[str] = field(default_factory=list)
    # Where the user can look: "run.sh:12", a rule file, a source path.
    where: str = ""
    # Free-form structured detail for reports (group, ranks, versions, ...).
    detail: dict[str, Any] = field(default_factory=dict)
    # For a recorded op at `where` (the line that called torch): the framework lines that chose
    # it, "path:line", where another (the trace's `chosen`: DeepSpeed's engine.py, not its comm).
    chosen: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.chosen:
            del out["chosen"]  # said only of recorded ops that a framework line chose
        return out
