"""Where `scan` or `gate` shows a cause whose remedy is an edit of the inputs, the one command that
makes the patch and verifies it: `p2paudit fix --config run.sh ...` with the scan's own inputs.
Nothing is re-scanned here; `fix` verifies the patch by a re-scan before it offers it."""

from __future__ import annotations

import shlex
from typing import Any

from auditor.analysis import causes
from auditor.fix.remedies import options_for, pick
from auditor.scan import ScanInputs


def input_args(inputs: ScanInputs) -> list[str]:
    """The options that give a command the scan's inputs (targets, torch, --command, --set)."""
    argv = [a for t in inputs.targets or [] for a in ("--target", t)]
    argv += ["--torch", inputs.torch_version] if inputs.torch_version else []
    argv += ["--command", inputs.command] if inputs.command else []
    return argv + [a for k, v in (inputs.overrides or {}).items() for a in ("--set", f"{k}={v}")]


def command(inputs: ScanInputs) -> str:
    """`p2paudit fix` with the inputs the scan was given."""
    return shlex.join(["p2paudit", "fix", "--config", inputs.config_path, *input_args(inputs)])


def point(doc: dict[str, Any], inputs: ScanInputs) -> None:
    """`fix_command` on each cause's finding whose default remedy is an edit and which carries
    no patch yet: the command, and what its default option does."""
    findings = doc.get("findings") or []
    for cause in causes.group(findings):
        f = findings[cause.index]
        option = pick(options_for(f), set())
        if option is not None and option.mechanical and "patch" not in f:
            f["fix_command"] = {"command": command(inputs), "says": option.says()}


def for_sites(doc: dict[str, Any], site_ids: list[str],
              key: str = "fix_command") -> dict[str, Any] | None:
    """The `fix_command` (or `patch`, where `fix` made one) of the cause that explains any of
    these sites (its own finding's, or a finding it groups), where one has it."""
    findings = doc.get("findings") or []
    wanted = set(site_ids)
    for cause in causes.group(findings):
        root = findings[cause.index]
        sites = {s for i in (cause.index, *cause.consequences)
                 for s in findings[i].get("site_ids") or []}
        if key in root and wanted & sites:
            return dict(root[key])
    return None
