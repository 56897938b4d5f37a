"""`p2paudit diff A.json B.json`: what changed from scan A to scan B (targets, config, sites,
findings). Exit status 0 whatever changed (the gate is what fails CI), 2 on bad input."""

from __future__ import annotations

import argparse

from auditor.analysis.diff import diff
from auditor.commands import options
from auditor.commands.output import emit_report
from auditor.errors import EXIT_OK
from auditor.report import document


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", metavar="A.json", help="the earlier scan (or sites) document")
    parser.add_argument("after", metavar="B.json", help="the later one")
    options.add_format(parser, *options.report_format("diff"))
    options.add_output(parser)


def run(args: argparse.Namespace) -> int:
    d = diff(document.load(args.before), document.load(args.after))
    emit_report(d, "diff", args.format, args.output)
    return EXIT_OK
