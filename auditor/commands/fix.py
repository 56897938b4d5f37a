"""`p2paudit fix --config run.sh`: the patch that removes the script's findings, verified by a
re-scan of the patched script before it is offered.

The unified diff goes to stdout (or `-o FILE`); what each option does to each finding goes to
stderr. `--apply` writes the verified patch over the script after a backup beside it
(`run.sh.p2paudit-bak`; the entry script too where the patch edits what it sets from Python),
and refuses a file that changed since the scan, a symlink, or a patch that did not verify. Exit status: 0 when the verified patch leaves a run `scan` calls clean,
1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from auditor.commands import options
from auditor.commands.output import emit, emit_report, replace_file
from auditor.config.coerce import overrides_from
from auditor.config.launch import read_script
from auditor.errors import EXIT_FINDINGS, InputError
from auditor.fix import plan as fix_plan
from auditor.fix import report
from auditor.scan import ScanInputs

BACKUP = ".p2paudit-bak"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_config(parser)
    options.add_command(parser)
    options.add_targets(parser)
    options.add_torch(parser)
    options.add_set(parser)
    options.add_entry(parser, "entry point(s) instead of the framework's (in order: init first)")
    parser.add_argument("--option", action="append", default=[], metavar="NAME",
                        help="a cause's fix option instead of its default (repeatable; the "
                             "report lists each cause's options)")
    parser.add_argument("--format", choices=("diff", "text", "html", "json", "sarif"),
                        default="diff",
                        help="diff: the unified diff; the others: the scan's report with each "
                             "cause's verified patch under it (SARIF `fixes`)")
    options.add_output(parser, "write the patch here instead of stdout")
    parser.add_argument("--apply", action="store_true",
                        help=f"write the verified patch to the script, after a copy to "
                             f"SCRIPT{BACKUP}")
    parser.add_argument("--simulate", action=argparse.BooleanOptionalAction, default=None,
                        help="run `simulate` on the patched script too (default: where it "
                             "applies, a megatron-core pipeline; it takes seconds to minutes)")
    options.add_jobs(parser)


def run(args: argparse.Namespace) -> int:
    if args.apply and args.output:
        raise InputError("--apply", "writes the script itself; leave out -o")
    options.check_config(args.config)
    # A script scan refuses (missing, a directory, not UTF-8) is refused here with scan's line,
    # before the patcher reads it as text. Without --target, a script that states not every
    # release is patched and verified on the newest combination scan judges it on: the one whose
    # document scan's findings come from (as `simulate` runs it).
    read_script(args.config, lossless=True)
    targets = args.target or fix_plan.newest_releases(args.config, args.training_command)
    if not args.target and targets:
        print(f"p2paudit fix: no release stated: patched and verified on the newest releases the "
              f"rules verify that fit together, {', '.join(targets)} (--target NAME==VERSION "
              f"gives the run's)", file=sys.stderr)
    inputs = ScanInputs(args.config, targets, overrides_from(args.set), args.torch,
                        args.entry, args.jobs, progress=sys.stderr.isatty(),
                        command=args.training_command)
    plan = fix_plan.make(inputs, set(args.option), args.simulate)
    known = {o.option for p in plan.proposals for o in p.options}
    unknown = sorted(set(args.option) - known)
    if unknown:
        raise InputError(unknown[0], f"--option: no cause of this run has that option "
                                     f"(options: {', '.join(sorted(known)) or 'none'})")
    sys.stderr.write(report.text(plan))
    if args.format != "diff":
        emit_report(report.attach(plan), "scan", args.format, args.output)
        return plan.exit_code
    if not plan.edits:
        print("p2paudit fix: nothing to patch: no finding has a mechanical remedy that verified; "
              "nothing written", file=sys.stderr)
        return plan.exit_code
    if not plan.verified:
        print("p2paudit fix: no verified patch: nothing written", file=sys.stderr)
        return EXIT_FINDINGS
    if args.apply:
        backup = apply(plan)
        print(f"p2paudit fix: patched {', '.join(plan.patched)} (the original(s): {backup})",
              file=sys.stderr)
    else:
        emit(plan.diff(), args.output)
    return plan.exit_code


def apply(plan: fix_plan.FixPlan) -> str:
    """Write the verified patch over each file it changes (the launch script, the entry
    script), which must each still be the file scanned; each original goes to
    FILE.p2paudit-bak first (never over an earlier backup). Nothing is written unless every
    file passes. Returns the backups' paths."""
    if not plan.verified:
        raise InputError(plan.path, "the patch did not verify: not applied")
    for path in plan.patched:
        if os.path.islink(path) or not os.path.isfile(path):
            raise InputError(path, "not a regular file (a symlink's target is not written): "
                                   "apply the diff by hand")
        if fix_plan.sha256(fix_plan.read_text(path)) != plan.sha256(path):
            raise InputError(path, "changed since the scan: run p2paudit fix again")
        if os.path.exists(path + BACKUP):
            raise InputError(path + BACKUP, "a backup from an earlier fix exists: move it away first")
    backups = []
    for path, text in plan.patched.items():
        backups.append(_write(path, plan.sources[path], text))
    return ", ".join(backups)


def _write(path: str, original: str, text: str) -> str:
    """The backup first, then the patched text in place as -o writes a regular file
    (output.replace_file: whole or not at all, the mode kept, no temporary file left); a failed
    write removes its backup too, so that a later fix is not refused for it."""
    backup = path + BACKUP
    try:
        with open(backup, "x", encoding="utf-8", newline="") as f:
            f.write(original)
    except FileExistsError:
        raise InputError(backup, "a backup from an earlier fix exists: move it away first") from None
    shutil.copymode(path, backup)
    try:
        replace_file(text, os.path.realpath(path), path, os.stat(path))
    except BaseException:
        os.unlink(backup)
        raise
    return backup
