"""`p2paudit export TRACE_DIR --format parquet -o OUT/`: a recorded trace as two Parquet tables
(the columns: auditor.report.parquet)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from auditor.commands.output import refuse_input
from auditor.errors import EXIT_OK
from auditor.report.parquet import write_tables
from auditor.simulate import machine

FORMATS = ("parquet",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", metavar="TRACE_DIR", help="trace directory written by p2paudit record")
    parser.add_argument("--format", choices=FORMATS, default="parquet")
    parser.add_argument("-o", "--output", required=True, metavar="DIR",
                        help="directory for ops.parquet and groups.parquet (created; files there "
                             "of the same names are replaced)")
    parser.add_argument("--jobs", type=machine.jobs_option, metavar="N",
                        help="worker processes converting rank files (default: the cores; at "
                             "most the cores)")


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    ops, files = write_tables(args.trace, out, args.jobs,
                              lambda note: print(f"p2paudit export: {note}", file=sys.stderr),
                              refuse_input)
    print(f"p2paudit export: {ops} ops of {files} rank file(s) -> {out / 'ops.parquet'}, "
          f"{out / 'groups.parquet'}", file=sys.stderr)
    return EXIT_OK
