"""`p2paudit sites TARGET...`: the inventory of P2P call sites."""

from __future__ import annotations

import argparse
import json
import sys

from auditor import sources
from auditor.commands.output import emit
from auditor.errors import EXIT_OK
from auditor.report import document, text
from auditor.static.inventory import inventory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "targets", nargs="+", metavar="TARGET",
        help="installed distribution name, wheel or sdist path, source directory, or NAME==VERSION",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    parser.add_argument("--jobs", type=int, default=None, help="parser processes (default: the idle cores)")


def run(args: argparse.Namespace) -> int:
    srcs = [sources.resolve(t) for t in args.targets]
    invs = [inventory(s, jobs=args.jobs, progress=sys.stderr.isatty()) for s in srcs]
    doc = document.build(
        srcs, [site.to_json() for inv in invs for site in inv.sites], [i.analysis for i in invs]
    )
    if args.format == "json":
        emit(json.dumps(doc, indent=2) + "\n", args.output)
    else:
        emit(text.sites_table(doc), args.output)
        if args.output:
            print(text.summary_line(doc), file=sys.stderr)
    return EXIT_OK
