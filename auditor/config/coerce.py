"""Text as the framework's argument parser types it: a launch script's flag values and the
`--set KEY=VALUE` pairs of the command line. Text the parser would reject is bad input."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from auditor.bash.values import Symbolic
from auditor.config.expr import UNKNOWN
from auditor.config.flags import normalise
from auditor.errors import InputError

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def coerce(raw: Any, kind: str, spelling: str, line: int | None, path: str = "--set") -> Any:
    """A flag's text as the framework's argument parser would type it; bad text is bad input."""
    if isinstance(raw, Symbolic):
        return UNKNOWN
    optional = kind.startswith("optional_")
    base = kind.removeprefix("optional_")
    if isinstance(raw, str) and raw.lower() in ("none", "null") and (optional or kind == "auto"):
        return None
    if base == "bool":
        if raw is True or raw is False:
            return raw
        if str(raw).lower() in _TRUE:
            return True
        if str(raw).lower() in _FALSE:
            return False
    elif base == "int":
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and re.fullmatch(r"[+-]?\d+", raw.strip()):
            return int(raw)
    elif base == "json":
        try:
            return json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            pass
    elif base == "str":
        return raw if isinstance(raw, str) else str(raw)
    elif base == "auto":
        text = str(raw).strip()
        if re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        return text
    raise InputError(path, f"{spelling} {raw!r}: expected {kind.replace('_', ' ')}", line)


def overrides_from(pairs: Iterable[str]) -> dict[str, str]:
    """`--set KEY=VALUE` arguments to a dict; a pair without `=` is bad input."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError("--set", f"{pair!r}: expected KEY=VALUE")
        out[normalise(key.strip())] = value.strip()
    return out
