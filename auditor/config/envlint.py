"""Lint the environment a launch script sets, by variable name and value.

The knowledge (which variables nothing reads, which are deprecated aliases, which only work
together with another) is the `[[env_var]]` table of `rules/torch.toml`, keyed by torch version.
Findings that depend on derived values (a timeout too large to ever end a hang, DETAIL on a torch
whose debug wrapper unbatches P2P, lazy NCCL init with nothing bounding it) are `[[check]]`
entries evaluated by `auditor.config.derive.derive`, with `detail.category == "env"`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.bash.values import EnvVar, Symbolic
from auditor.config.envread import consumer_value, readers
from auditor.config.model import LaunchConfig
from auditor.errors import InputError
from auditor.findings import Finding

STATUSES = ("unread", "deprecated", "requires", "value")
NCCL_PREFIXES = ("NCCL_", "TORCH_NCCL_")


def lint(launch: LaunchConfig, torch_version: str | None,
         rules_directory: Path | None = None) -> list[Finding]:
    """One finding per variable the script sets that does not do what its name suggests."""
    table = {e["name"]: e for e in rulebook.load("torch", torch_version, rules_directory)
             .table("env_var")}
    env_readers = readers(torch_version, rules_directory)
    findings = []
    other_backend = any(d.kind == "launch.backend" for d in launch.diagnostics)
    for var in sorted(launch.env.values(), key=lambda v: v.line):
        if other_backend and var.name.startswith(NCCL_PREFIXES):  # HCCL reads none of them
            continue
        entry = table.get(var.name)
        if entry is not None:
            finding = _check(var, entry, launch, env_readers)
            if finding is not None:
                findings.append(finding)
    return findings


def _check(var: EnvVar, entry: dict[str, Any], launch: LaunchConfig,
           env_readers: dict[str, str]) -> Finding | None:
    status = entry.get("status")
    if status not in STATUSES:
        raise InputError("rules/torch.toml", f"[[env_var]] {var.name}: status {status!r} "
                                             f"is not one of {', '.join(STATUSES)}")
    where = var.where(launch.path)
    shown = f"{var.name}={var.value}"
    detail = {"variable": var.name, "source": entry.get("source", ""), "category": "env"}
    severity = entry.get("severity", "warning")
    if status == "unread":
        return Finding("env-unread", severity, f"{shown}: {entry['message']}",
                       entry.get("fix", f"remove {var.name}"), where=where, detail=detail)
    if status == "deprecated":
        new = entry["replacement"]
        if new in launch.env:
            message = f"{shown} is a deprecated alias of {new}, which the script also sets"
        else:
            message = f"{shown} is a deprecated alias of {new}: still read, with a warning"
        return Finding("env-deprecated", severity, message, f"rename it to {new}",
                       where=where, detail=detail)
    if status == "requires":
        missing = [f"{name}={value}" for name, value in entry["requires"].items()
                   if _value(launch.env.get(name), env_readers) not in (value, _UNKNOWN)]
        if not missing:
            return None
        return Finding("env-ineffective", severity,
                       f"{shown}: {entry['message']} (the script does not set {', '.join(missing)})",
                       entry.get("fix", f"also set {', '.join(missing)}"), where=where,
                       detail=detail)
    value = _value(var, env_readers)
    if value is _UNKNOWN or value in entry["allowed"]:
        return None
    return Finding("env-bad-value", severity, f"{shown}: {entry['message']}",
                   entry.get("fix", ""), where=where, detail=detail)


_UNKNOWN = object()


def _value(var: EnvVar | None, env_readers: dict[str, str]) -> Any:
    """The value as the variable's consumer reads it (auditor.config.envread)."""
    if var is None:
        return None
    if isinstance(var.value, Symbolic):
        return _UNKNOWN
    return consumer_value(var.value, env_readers.get(var.name, "exact"))
