"""Where a cause is, as a headline names it: a file of a checkout from the checkout's root
(`examples/merge_mp_bert.sh:8`), never by the auditing machine's absolute path, which wraps a
cause's FILE:LINE past the first screen (issue 25) and is no path a user of another clone acts on.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from auditor.bash.absent import checkout_root

_AT = re.compile(r"^(?P<path>.+):(?P<line>\d+(?:-\d+)?)$")


def shown(path: str | Path, root: Path | None = None) -> str:
    """`path` from the root of the checkout it lies in (`root`, else the one around it); a
    relative path, or one outside any checkout, as given."""
    text = str(path)
    if not os.path.isabs(text):
        return text
    root = root if root is not None else checkout_root(text)
    here = Path(os.path.normpath(text))
    return str(here.relative_to(root)) if root is not None and here.is_relative_to(root) else text


def shown_at(where: str) -> str:
    """A `FILE:LINE` location with its file `shown`; any other text as given."""
    m = _AT.match(where)
    return f"{shown(m['path'])}:{m['line']}" if m else where
