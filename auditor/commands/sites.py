"""`p2paudit sites TARGET...`: the inventory of P2P call sites."""

from __future__ import annotations

import argparse
import sys

from auditor import sources
from auditor.commands import options
from auditor.commands.output import emit_report
from auditor.errors import EXIT_OK, InputError
from auditor.report import document, text
from auditor.static.inventory import inventory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_target_list(
        parser, "installed distribution name, wheel or sdist path, source directory, or NAME==VERSION")
    options.add_format(parser, *options.report_format("sites"))
    options.add_output(parser)
    options.add_jobs(parser)


def run(args: argparse.Namespace) -> int:
    if not args.targets:
        raise InputError("TARGET", "name at least one target (`sites NAME==VERSION` or `--target`)")
    srcs = [sources.resolve(t) for t in args.targets]
    invs = [inventory(s, jobs=args.jobs, progress=sys.stderr.isatty()) for s in srcs]
    doc = document.build(
        srcs, [site.to_json() for inv in invs for site in inv.sites], [i.analysis for i in invs]
    )
    emit_report(doc, "sites", args.format, args.output)
    if args.format == "text" and args.output:
        print(text.summary_line(doc), file=sys.stderr)
    return EXIT_OK
