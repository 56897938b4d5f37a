"""`p2paudit report [--scan scan.json] --trace DIR [-o report.html]`: the scan joined with a
recorded run (or with PyTorch Flight Recorder dumps: `--flight-recorder DIR`), as one
self-contained HTML file, or the joined document as JSON or SARIF, or a Perfetto trace.

`--nccl-log FILE|DIR` (the job's NCCL_DEBUG=INFO logs) replaces the modelled transport and its
bounds with what the log states (auditor.analysis.ncclbounds), naming the line that decided.

Without --scan the run alone is judged: a trace is evidence enough for the dynamic verdicts (a
hang, a wait-for cycle, mismatched pairs, a crashed or incomplete run).

Exit status, as auditor.analysis.verdict decides it: 1 when the report holds an error (a
contradiction, a static miss, a deadlocking op order, an unbatched op under batch_p2p_comm=True)
or something the contradiction rule needs is undecided, 0 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from auditor import __version__, sources
from auditor.analysis import ncclbounds
from auditor.analysis import verdict
from auditor.analysis.join import join_run, no_scan
from auditor.analysis.waitfor.transports import transport_names
from auditor.commands import options
from auditor.commands.output import emit_report
from auditor.dynamic.runs import read_run
from auditor.errors import InputError
from auditor.report import document, formats
from auditor.static.inventory import inventory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scan", metavar="SCAN.JSON",
                        help="a scan document (p2paudit scan --format json; a sites inventory "
                             "works too) to join the run with; without it the run alone is "
                             "judged (hang, wait-for cycle, mismatch, a crashed run)")
    options.add_trace(parser, "trace directory written by p2paudit record")
    options.add_flight_recorder(parser)
    parser.add_argument("--trace-target", action="append", default=[], metavar="TARGET",
                        help="the sources the trace was recorded with, when they are another "
                             "release than the scan's: events are matched by stable id")
    parser.add_argument("--transport", choices=transport_names(),
                        help="NCCL transport the recorded op order is replayed under: one "
                             "transport, or a topology (node = P2P or SHM, net = NET/Socket or "
                             "NET/IB) whose transports must agree for 'will deadlock' (default: "
                             "net for an NCCL trace, gloo for a gloo one)")
    options.add_init(parser, "communicator creation the replay assumes (default: as recorded)")
    options.add_nccl_log(parser)
    options.add_format(parser, *options.report_format("run"))
    options.add_output(parser, "write here instead of stdout (html on a terminal: report.html)")


def _cluster(args: argparse.Namespace, doc: dict[str, Any]) -> ncclbounds.Decision | None:
    """What `--nccl-log` decides of the transport the replay asks about (--transport, else the
    network), read against the scan's torch pin where a scan is given."""
    if args.nccl_log and args.transport == "gloo":
        raise InputError("--nccl-log", "an NCCL log says nothing about --transport gloo")
    torch = doc.get("config", {}).get("effective", {}).get("torch_version")
    return ncclbounds.from_logs(args.nccl_log, args.transport or "net",
                                torch if isinstance(torch, str) else None)


def run(args: argparse.Namespace) -> int:
    if args.scan is None and not (args.trace or args.flight_recorder):
        raise InputError("--scan", "give --trace DIR or --flight-recorder DIR (and --scan "
                                   "SCAN.JSON to join the run with a scan)")
    # without a scan the document is still the contract's: it names the p2paudit that judged it
    doc = document.load(args.scan) if args.scan else \
        {"tool": {"name": "p2paudit", "version": __version__}, **no_scan()}
    trace = read_run(args.trace, args.flight_recorder, doc["sites"])
    cluster = _cluster(args, doc)
    if trace is not None:
        trace_sites = None
        if args.trace_target:
            trace_sites = [site.to_json() for t in args.trace_target
                           for site in inventory(sources.resolve(t)).sites]
        doc = join_run(doc, trace, trace_sites=trace_sites, transport=args.transport,
                       init=args.init, bounds=cluster.transports if cluster else ())
        if cluster is not None:
            doc["run"]["nccl_log"] = cluster.to_json()
    elif args.trace_target or args.transport or args.init or args.nccl_log:
        raise InputError("--trace", "--trace-target, --transport, --init and --nccl-log need "
                                    "--trace DIR")
    result = verdict.finish(doc)
    emit_report(doc, "run", args.format, args.output, formats.context(args.format, doc, trace))
    print(f"p2paudit report: {result.headline}", file=sys.stderr)
    return result.exit_code
