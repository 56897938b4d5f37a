"""An [[arg]] of a release whose rules the checkout does not confirm, read from the checkout's
own parser instead (issue 22 item 6: flag spellings and defaults from the front end itself, rules
only for what they mean)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from auditor.config.coerce import coerce
from auditor.config.expr import show
from auditor.config.frontend_parser import checkout_settings
from auditor.config.model import LaunchConfig

Given = tuple[Any, str, str, tuple[int, ...]]  # value, provenance, source, launch-script lines


def arg_from_checkout(raw: dict[str, Any], root: Path, label: str, launch: LaunchConfig) -> Given | None:
    """The value of the [[arg]] `raw` in the Megatron-LM checkout `root` (`label`: "megatron-lm
    0.15.0"): None (no such setting) where no flag of its parser sets the key, else the flag the
    launch gives, else its add_argument's literal default; None where the parser decides nothing
    (not all of it read, or a default that is no literal)."""
    parser = checkout_settings(root)
    if parser is None:
        return None
    key = raw["key"]
    if key not in parser.names:
        return (None, f"{label}: no flag of the parser of the checkout {root} sets {key}: the release "
                "has no such setting", f"{label}: the checkout {root}", ())
    flag = launch.flags.get(key)
    if flag is not None:
        value = coerce(flag.value, raw.get("type", "str"), flag.spelling, flag.line, launch.path)
        shown = "" if flag.value is True else f" {flag.value}"
        return (value, f"{launch.path}:{flag.line}: {flag.spelling}{shown}", f"{launch.path}:{flag.line}",
                (flag.line,))
    if key in parser.defaults:
        default, where = parser.defaults[key]
        return (default, f"{label}: {key} defaults to {show(default)} in the parser of the checkout "
                f"{root} ({where})", f"{label}: {where} of the checkout {root}", ())
    return None
