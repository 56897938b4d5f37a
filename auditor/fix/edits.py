"""A text edit: replace `length` characters at `offset` of one file with `text`. The one form
every remedy takes (launch-script lines, libcst codemods), applied, diffed and written to SARIF
(`deletedRegion` charOffset/charLength, `insertedContent`) from the same numbers."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class TextEdit:
    path: str
    offset: int
    length: int
    text: str

    def overlaps(self, other: TextEdit) -> bool:
        return (self.path == other.path and self.offset < other.offset + max(other.length, 1)
                and other.offset < self.offset + max(self.length, 1))

    def line(self, source: str) -> int:
        """The 1-based line the edit starts on."""
        return source.count("\n", 0, self.offset) + 1

    def to_json(self, source: str) -> dict[str, Any]:
        return {"path": self.path, "offset": self.offset, "length": self.length,
                "text": self.text, "line": self.line(source)}


def apply(source: str, edits: list[TextEdit]) -> str:
    """`source` with `edits` (of one file, none overlapping) made."""
    out = source
    for e in sorted(edits, reverse=True):
        out = out[:e.offset] + e.text + out[e.offset + e.length:]
    return out


def between(path: str, old: str, new: str) -> list[TextEdit]:
    """The one edit that turns `old` into `new`: what differs between their common prefix and
    suffix (a codemod's output as an edit)."""
    if old == new:
        return []
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    return [TextEdit(path, start, len(old) - end - start, new[start:len(new) - end])]


def lines_between(path: str, old: str, new: str) -> list[TextEdit]:
    """`between`, widened to whole lines of `old`: two codemods' edits of one line overlap
    (and so are never merged into one patch), where their minimal edits could only touch."""
    out = []
    for e in between(path, old, new):
        start = old.rfind("\n", 0, e.offset) + 1
        end = e.offset + e.length
        if not (e.length and old[end - 1] == "\n"):
            stop = old.find("\n", end)
            end = len(old) if stop < 0 else stop + 1
        text = old[start:e.offset] + e.text + old[e.offset + e.length:end]
        out.append(TextEdit(path, start, end - start, text))
    return out


def unified(path: str, old: str, new: str) -> str:
    """A unified diff `git apply` and `patch -p1` take (a/ and b/ prefixes)."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 f"a/{path}", f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)


def merge(groups: list[list[TextEdit]]) -> tuple[list[TextEdit], list[int]]:
    """The edits of several options as one patch: identical edits once; an option whose edit
    overlaps one taken before is left out (its index returned)."""
    taken: list[TextEdit] = []
    dropped = []
    for i, group in enumerate(groups):
        fresh = [e for e in group if e not in taken]
        if any(e.overlaps(t) for e in fresh for t in taken):
            dropped.append(i)
            continue
        taken += fresh
    return sorted(taken), dropped
