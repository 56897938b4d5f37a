"""JSON at the boundary: what p2paudit writes is JSON, and what it reads is refused whole when it
is not.

Python's json writes NaN and Infinity, which no other JSON reader (Perfetto, jq, a SARIF
viewer) accepts, and reads them back; a document nested deeper than Python's recursion limit
raises RecursionError, which would read as p2paudit's own crash. Both are the input's fault and
are reported as such: one line naming the input, or the place in the output.
"""

from __future__ import annotations

import json
import math
from typing import Any

from auditor.errors import InputError


def dumps(obj: Any, **options: Any) -> str:
    """json.dumps with allow_nan=False: a non-finite number is refused, naming where it is."""
    try:
        return json.dumps(obj, allow_nan=False, **options)
    except ValueError as exc:
        where = _non_finite(obj)
        if where is None:
            raise
        pointer, value = where
        name = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        raise InputError(name, f"at {pointer or '/'} of the output: not a JSON number (a "
                                     "value the inputs gave is not finite); nothing written") from exc
    except RecursionError:
        raise InputError("the output", "nested too deeply to write as JSON (an input nests as "
                                       "deeply); nothing written") from None


def _non_finite(obj: Any, pointer: str = "") -> tuple[str, float] | None:
    """The JSON pointer and value of the first NaN or infinity in `obj`."""
    stack = [(pointer, obj)]
    while stack:
        at, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return at, value
        if isinstance(value, dict):
            stack += [(f"{at}/{k}", v) for k, v in reversed(value.items())]
        elif isinstance(value, (list, tuple)):
            stack += [(f"{at}/{i}", v) for i, v in reversed(list(enumerate(value)))]
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads(text: str | bytes, subject: str) -> Any:
    """The JSON value of `text`, read from `subject`; InputError naming it when the text is not
    JSON (NaN and Infinity included) or nests too deeply to read."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise InputError(subject, f"not JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) \
            from None
    except ValueError as exc:
        raise InputError(subject, f"not JSON: {exc}") from None
    except RecursionError:
        raise InputError(subject, "nested too deeply to read (a JSON document this deep is no "
                                  "p2paudit document)") from None
