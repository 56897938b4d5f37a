"""Environment values as the code that consumes them reads them.

A launch script's `TORCH_DISTRIBUTED_DEBUG=detail` is DETAIL to c10d, which upper-cases the value;
`TORCH_NCCL_USE_COMM_NONBLOCKING=true` is *unset* to torch, whose `c10::utils::check_env` accepts
only "0" and "1" and ignores anything else with a warning. Which reader a variable goes through
is data: the `reader` of its `[[env_var]]` entry in `rules/torch.toml` (default `exact`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.errors import InputError

# `--set env.NAME=VALUE`: NAME's value in the environment the training command gets, where the
# script leaves it unknown (a `source` of a file not here, an unknown launcher option word).
ENV_PREFIX = "env."
# EnvVar.how of a variable `--set env.` gives: no line of any file states it.
SET_ENV = "set"
# EnvVar.how of a setting whose known value reaches the training command as the script states it
# ("assign" reaches it only if the caller exports the name; "environ" is the caller's own).
STATED = ("export", "inline", "python")

# reader -> what the consumer makes of the text it got (None: as if the variable were unset).
READERS = {
    "exact": lambda raw: raw,
    "upper": lambda raw: raw.upper(),
    "check_env": lambda raw: raw if raw in ("0", "1") else None,
}


def readers(torch_version: str | None, rules_directory: Path | None = None) -> dict[str, str]:
    """Variable name -> reader, for the torch release in use."""
    out = {}
    for entry in rulebook.load("torch", torch_version, rules_directory).table("env_var"):
        reader = entry.get("reader", "exact")
        if reader not in READERS:
            raise InputError("rules/torch.toml", f"[[env_var]] {entry['name']}: reader {reader!r} "
                                                 f"is not one of {', '.join(READERS)}")
        out[entry["name"]] = reader
    return out


def consumer_value(raw: Any, reader: str) -> Any:
    """The value the consumer sees; non-text (unknown, None) passes through."""
    return READERS[reader](raw) if isinstance(raw, str) else raw


def env_key(key: str) -> str | None:
    """NAME of a `--set env.NAME=VALUE` key; None for a config key."""
    return key[len(ENV_PREFIX):] if key.startswith(ENV_PREFIX) else None


def given(name: str, text: str, torch_version: str | None, rules_directory: Path | None = None) -> str:
    """`text` of `--set env.NAME=text`, refused (InputError) where torch would not read it as one
    of the values its `[[env_var]]` entry allows: a level torch rejects is no level of a run."""
    for entry in rulebook.load("torch", torch_version, rules_directory).table("env_var"):
        if entry["name"] == name and "allowed" in entry:
            if consumer_value(text, entry.get("reader", "exact")) not in entry["allowed"]:
                raise InputError(f"--set {ENV_PREFIX}{name}={text}",
                                 f"torch reads {name} as one of {', '.join(entry['allowed'])} only")
    return text
