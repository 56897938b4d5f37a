"""Where `scan` or `gate` shows a cause whose remedy is an edit of the inputs, the one command that
makes the patch and verifies it: `p2paudit fix --config run.sh ...` with the scan's own inputs.
Named only where `fix` has edits for it (fix.plan.propose decides, for both): a remedy that
edits nothing of this run (a release's code, not the trainer's) is no patch to point to.
Nothing is re-scanned or read again here: the config is the scan's own read (ScanInputs.reads),
a script read afresh only where the scan read none for `fix`'s targets (a `--target` that states
part of the stack); `fix` verifies the patch by a re-scan before it offers it."""

from __future__ import annotations

import os
import shlex
from typing import Any

from auditor.analysis import causes
from auditor.errors import InputError
from auditor.fix import plan
from auditor.fix.remedies import options_for, pick
from auditor.fix.verify import input_args
from auditor.scan import ScanInputs, read_config, read_key


def command(inputs: ScanInputs) -> str:
    """`p2paudit fix` with the inputs the scan was given."""
    return shlex.join(["p2paudit", "fix", "--config", inputs.config_path, *input_args(inputs)])


def point(doc: dict[str, Any], inputs: ScanInputs) -> None:
    """`fix_command` on each cause's finding that carries no patch yet and whose default remedy
    `fix` makes as edits: the command, and what its default option does. A script `fix` cannot
    read again (a pipe, text that is not UTF-8) gets none. `inputs.reads`: the configs the scan
    read, where it kept them."""
    findings = doc.get("findings") or []
    on: plan.Bench | None = None
    for cause in causes.group(findings):
        f = findings[cause.index]
        option = pick(options_for(f), set())
        if option is None or not option.mechanical or "patch" in f:  # an upgrade edits nothing
            continue
        if on is None:
            if not os.path.isfile(inputs.config_path):
                return
            try:
                source = plan.read_text(inputs.config_path)
                targets = inputs.targets or plan.newest_releases(inputs.config_path, inputs.command)
                read = (inputs.reads or {}).get(read_key(targets)) \
                    or read_config(inputs.config_path, targets, inputs.command)
                on = plan.bench(inputs, read, source)
            except (OSError, UnicodeDecodeError, InputError):
                # fix refuses what it cannot read back, or a script whose first command is no
                # pipeline run (NotAPipelineRun): no pointer, and never the scan's verdict
                return
        proposal = plan.propose(on, doc, cause, set())
        if proposal is not None and proposal.edits:
            f["fix_command"] = {"command": command(inputs), "says": proposal.option.says()}


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
