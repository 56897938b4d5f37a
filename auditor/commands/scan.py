"""`p2paudit scan --config run.sh`: which P2P sites can fire in this run, and which contradict
its config."""

from __future__ import annotations

import argparse
import sys

from auditor import jsonio
from auditor.analysis import verdict
from auditor.analysis.join import join_run
from auditor.commands import options
from auditor.commands.output import emit, emit_report, emit_unscanned
from auditor.config.coerce import overrides_from
from auditor.config.flags import normalise
from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, NotCoveredRun, ScriptExits
from auditor.config.entry_stack import UnknownStack
from auditor.config.releases import ReleaseUnavailable
from auditor.config.settings import ANSWERED_UNREAD, check_unscanned
from auditor.dynamic.runs import read_run
from auditor.errors import EXIT_FINDINGS, EXIT_OK, InputError
from auditor.fix import pointer
from auditor.report import text
from auditor.report.formats import Context, context
from auditor.scan import ScanInputs, run_scan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_config(parser)
    options.add_command(parser)
    options.add_targets(parser)
    options.add_torch(parser)
    options.add_set(parser)
    parser.add_argument("--matrix", metavar="KEY=V1,V2,...",
                        help="scan once per value and print what changes across them")
    options.add_entry(parser, "entry point(s) instead of the framework's (in order: init first)")
    options.add_trace(parser, "join with a run recorded by `p2paudit record` (what fired, per rank)")
    options.add_flight_recorder(parser)
    options.add_format(parser, *options.report_format("scan"))
    options.add_output(parser)
    options.add_jobs(parser)
    parser.add_argument("--verbose", action="store_true",
                        help="text: one block per site (default: sites that share an explanation "
                             "are one block)")


def run(args: argparse.Namespace) -> int:
    options.check_config(args.config)
    overrides = overrides_from(args.set)
    base = ScanInputs(args.config, args.target, overrides, args.torch, args.entry, args.jobs,
                      progress=sys.stderr.isatty(), command=args.training_command, reads={})
    try:
        return _run(args, base, overrides)
    except ANSWERED_UNREAD as exc:
        # answered before the settings are read: a misspelt key is still bad input
        check_unscanned(_given(args, overrides), exc)
        return _unscanned_answer(args, exc)


def _given(args: argparse.Namespace, overrides: dict[str, str]) -> dict[str, str]:
    """The keys the user names, each with the option that named it (settings.check_settings)."""
    given = dict.fromkeys(overrides, "--set")
    if args.matrix:
        given[normalise(args.matrix.partition("=")[0].strip())] = "--matrix"
    return given


def _unscanned_answer(args: argparse.Namespace, exc: InputError) -> int:
    """The answer for a run decided, or left undecided, before any scan."""
    if isinstance(exc, NotAPipelineRun):  # decided: nothing of what p2paudit audits runs here
        said = verdict.unpipelined(exc.what, exc.config, args.torch)
        return emit_unscanned(args, said, None if said.status == "findings" else exc.config)
    if isinstance(exc, NotCoveredRun):  # a pipeline engine no rules model: what it is, never clean
        return emit_unscanned(args, verdict.not_covered(exc.what, exc.decide), exc.config)
    if isinstance(exc, UnknownStack):  # a package no rules model runs the training: undecided
        refused = None if exc.config is None else verdict.launcher_refuses(exc.config, args.torch)
        if refused is not None:  # torch's launcher stops it first, whatever the stack
            return emit_unscanned(args, verdict.script_exits(refused))
        return emit_unscanned(args, verdict.not_followed(exc.what, exc.decide), exc.config)
    if isinstance(exc, ScriptExits):  # decided: the script stops before it trains
        return emit_unscanned(args, verdict.script_exits(exc.what))
    if isinstance(exc, CommandNotFollowed):  # a valid script, an undecided run: exit 1
        return emit_unscanned(args, verdict.not_followed(f"{exc.subject}: {exc.what}", exc.DECIDE))
    assert isinstance(exc, ReleaseUnavailable)  # the release rules/ verifies is not on the index
    return emit_unscanned(args, verdict.not_followed(f"{exc.subject}: {exc.what}", exc.decide))

def _run(args: argparse.Namespace, base: ScanInputs, overrides: dict[str, str]) -> int:
    if args.matrix:
        if args.trace or args.flight_recorder or args.format not in ("text", "json"):
            raise InputError("--matrix", "prints a text or JSON comparison; --trace, "
                                         "--flight-recorder and the other formats take one scan")
        key, _, values = args.matrix.partition("=")
        if not key.strip() or not values:
            raise InputError(args.matrix, "--matrix wants KEY=V1,V2,...")
        key = normalise(key.strip())
        docs = {}
        for value in values.split(","):
            inputs = ScanInputs(**{**base.__dict__, "overrides": {**overrides, key: value},
                                   "matrix_key": key})
            docs[value] = run_scan(inputs)
        if args.format == "json":
            emit(jsonio.dumps({"matrix": key, "scans": docs}, indent=2, default=str) + "\n", args.output)
        else:
            emit(text.fit(text.matrix_table(key, docs), Context().width), args.output)
        return EXIT_OK if all(d["verdict"]["exit_code"] == EXIT_OK for d in docs.values()) \
            else EXIT_FINDINGS
    doc = run_scan(base)
    trace = read_run(args.trace, args.flight_recorder, doc["sites"])
    if trace is not None:
        doc = join_run(doc, trace)
    result = verdict.finish(doc)
    pointer.point(doc, base)  # the fix command under each cause with a mechanical remedy
    emit_report(doc, "scan", args.format, args.output,
                context(args.format, doc, trace, verbose=args.verbose))
    if args.output or args.format != "text":
        print(f"p2paudit scan: {result.headline}", file=sys.stderr)
    return result.exit_code
