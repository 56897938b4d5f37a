"""The checkout a rule was read on, found around an entry: the directory above it whose file the
rule's `source` cites holds the rule's `code`. Where it is, the framework code the entry runs with
is the code the rule speaks for (config.no_training, config.frontends.reader)."""

from __future__ import annotations

from pathlib import Path

DEPTH = 6  # directories above the entry searched for the framework's checkout


def rule_checkout(entry: Path, source: str, code: str) -> Path | None:
    """The directory above `entry` (DEPTH at most) whose file `source` cites ("OWNER/NAME@COMMIT
    PATH:LINE") holds `code`; None where none does."""
    file = source.split()[1].rsplit(":", 1)[0]
    for parent in list(entry.parents)[:DEPTH]:
        try:
            if code in (parent / file).read_text(encoding="utf-8"):
                return parent
        except (OSError, UnicodeDecodeError):
            continue
    return None
