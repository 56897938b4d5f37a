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
from pathlib import Path
from typing import Any

from auditor import jsonio, sources
from auditor.analysis import ncclbounds
from auditor.analysis import verdict
from auditor.analysis.headops import head_ops
from auditor.analysis.join import join
from auditor.analysis.waitfor.transports import transport_names
from auditor.commands import options
from auditor.commands.output import emit_report
from auditor.dynamic import flight_recorder
from auditor.dynamic.trace import Trace, read_trace_dir
from auditor.errors import InputError
from auditor.report import formats
from auditor.static.inventory import inventory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scan", metavar="SCAN.JSON",
                        help="a scan document (p2paudit scan --format json; a sites inventory "
                             "works too) to join the run with; without it the run alone is "
                             "judged (hang, wait-for cycle, mismatch, a crashed run)")
    options.add_trace(parser, "trace directory written by p2paudit record")
    add_flight_recorder_argument(parser)
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


def add_flight_recorder_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--flight-recorder", metavar="DIR",
                        help="PyTorch Flight Recorder dumps, one file per rank (JSON or pickle), "
                             "instead of a recorded trace")


def read_run(args: argparse.Namespace, doc: dict[str, Any]) -> Trace | None:
    """The run to join: a `record` trace or Flight Recorder dumps (never both), or None."""
    if args.trace and args.flight_recorder:
        raise InputError("--flight-recorder", "give --trace DIR or --flight-recorder DIR, not both")
    if args.flight_recorder:
        return flight_recorder.read_flight_recorder(args.flight_recorder, doc["sites"])
    return read_trace_dir(args.trace) if args.trace else None


def join_run(doc: dict[str, Any], trace: Trace, **options: Any) -> dict[str, Any]:
    """`join`, plus what Flight Recorder dumps alone can say (the rank whose dump ends first)."""
    joined = join(doc, trace, **options)
    if any(rt.meta.get("source") == "flight-recorder" for rt in trace.ranks.values()):
        joined["findings"] += [f.to_json() for f in flight_recorder.findings(trace)]
    return joined


def no_scan() -> dict[str, Any]:
    """The document a run is joined with when no scan is given: no site, no target (so no fired
    line is a static miss or outside the scanned sources: nothing was scanned)."""
    return {"sites": [], "targets": [], "findings": []}


def load_document(path: str) -> dict[str, Any]:
    """A scan or sites document from a file, or InputError naming the file and what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    doc = jsonio.loads(text, path)
    if not isinstance(doc, dict) or not isinstance(doc.get("sites"), list) \
            or not isinstance(doc.get("targets"), list):
        raise InputError(path, "not a p2paudit scan or sites document (no 'sites' and 'targets')")
    return doc


def context(fmt: str, doc: dict[str, Any], trace: Trace | None, **given: Any) -> formats.Context:
    """What the `fmt` reporter shows besides the document: the trace's ops with their wait-for
    states when it draws them (read here, so that the format runs no analysis)."""
    head = head_ops(trace, doc) if trace is not None and formats.reporter(fmt).wants_head \
        else None
    return formats.Context(head=head, **given)


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
    doc = load_document(args.scan) if args.scan else no_scan()
    trace = read_run(args, doc)
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
    emit_report(doc, "run", args.format, args.output, context(args.format, doc, trace))
    print(f"p2paudit report: {result.headline}", file=sys.stderr)
    return result.exit_code
