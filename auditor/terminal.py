"""What p2paudit prints never drives a terminal: control characters shown, not obeyed.

A launch script, a path or an archive member name can hold ESC, CR, BEL or NUL; printed raw, a
script could erase the FINDINGS line and print "CLEAN" in its place. Every output (a report, an
error line, a note) holds no control character but newline and tab: the others, C1 controls
(U+0080-U+009F, 8-bit CSI among them) and the bidirectional overrides that reorder a line's
text, are written as escapes (`\\x1b`, `\\r`, `\\u202e`) that show what the input held.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def visible(text: str) -> str:
    """`text` with every control character but newline and tab written as an escape."""
    return _CONTROL.sub(_escape, text)


class Visible:
    """A text stream that writes `visible(text)` to `inner` (the CLI's stderr)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        return self.inner.write(visible(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
