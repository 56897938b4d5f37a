"""`p2paudit repro CASE`: run a minimal reproducer under torchrun and print one verdict line.

Exit 0 when the run completed, 1 when it hung or failed, 2 when it cannot run as asked here.
`--predict` runs nothing: it prints what the wait-for model expects of the same op sequence, as
simulate and report do: can it deadlock, will it deadlock here, and the replay under the case's
conditions; its exit status is the verdict's (auditor.analysis.verdict). With `--nccl-log`, the
transport and channels a cluster's NCCL_DEBUG=INFO log states decide "will deadlock here".
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from auditor import jsonio
from auditor.analysis import ncclbounds
from auditor.analysis.replayverdict import prediction_verdict
from auditor.analysis.waitfor.deadlock import deadlock
from auditor.analysis.waitfor.replay import analyze
from auditor.commands import options
from auditor.commands.output import emit
from auditor.dynamic import backends
from auditor.errors import InputError
from auditor.report.text import deadlock_lines
from auditor.repro import CASES, load_case
from auditor.repro.plan import Spec

SIZE = re.compile(r"^\s*(\d+)\s*(B|K|KB|KiB|M|MB|MiB|G|GB|GiB)?\s*$", re.IGNORECASE)
UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
         "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def parse_size(text: str) -> int:
    """Bytes from `33554432`, `32MiB`, `16K`... (binary units: this is about buffer sizes)."""
    match = SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size in bytes: {text!r} (e.g. 33554432, 32MiB)")
    return int(match.group(1)) * UNITS[(match.group(2) or "").lower()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    fixes = sorted({f for name in CASES for f in load_case(name).FIXES})
    parser.add_argument("case", choices=sorted(CASES), metavar="CASE",
                        help="one of: " + ", ".join(sorted(CASES)))
    parser.add_argument("--nproc", type=int, default=2,
                        help="ranks (pipeline stages for fallback-1f1b); NCCL needs one GPU each")
    parser.add_argument("--backend", choices=("nccl", "gloo"),
                        help="default: nccl where CUDA is available, else gloo (the CPU variant)")
    parser.add_argument("--transport", choices=("nvlink", "net", "net-socket", "net-ib"),
                        help="NCCL transport for fallback-1f1b; net sets NCCL_P2P_DISABLE=1 "
                             "NCCL_SHM_DISABLE=1, as between nodes, and NCCL takes NET/IB where "
                             "it finds an IB device, else NET/Socket; net-socket and net-ib say "
                             "which (NCCL_DEBUG=INFO's 'via' lines), for --predict's verdict "
                             "(default: nvlink)")
    parser.add_argument("--size", type=parse_size,
                        help="bytes per activation for fallback-1f1b, e.g. 32MiB (the default)")
    parser.add_argument("--microbatches", type=int, help="fallback-1f1b: default max(4, nproc)")
    parser.add_argument("--variable-seq-lengths", choices=("true", "false"),
                        help="fallback-1f1b: megatron's shape exchange before each call "
                             "(default true, as ms-swift sets it)")
    parser.add_argument("--fix", choices=fixes, help="run the case with this fix applied")
    parser.add_argument("--timeout", type=float, default=40.0,
                        help="outer limit in seconds, counted from the first op (default 40)")
    parser.add_argument("--pg-timeout", type=float, default=18_000_000.0,
                        help="init_process_group timeout, also the store's (default: ms-swift's "
                             "18000000 s; set it below --timeout to see torch's own error)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the run here: spec, per-rank state, torchrun log, verdict.json")
    parser.add_argument("--predict", action="store_true",
                        help="run nothing; print the wait-for model's answer for this case")
    options.add_nccl_log(parser)
    options.add_format(parser, ("text", "json"), "text")
    options.add_output(parser)


def run(args: argparse.Namespace) -> int:
    case = load_case(args.case)
    if args.fix is not None and args.fix not in case.FIXES:
        raise InputError("--fix", f"{args.case} has no fix {args.fix!r}; it has: "
                         + ", ".join(case.FIXES))
    spec = spec_from_args(args)
    plan = case.plan(spec)
    if args.predict:
        return _predict(plan, args.format, args.output, args.nccl_log)
    if args.nccl_log:
        raise InputError("--nccl-log", "only with --predict (a run here prints its own log "
                                       "under NCCL_DEBUG=INFO)")
    from auditor.repro.launch import check_machine, launch

    check_machine(spec)
    outcome = launch(spec, plan, args.keep)
    if args.format == "json":
        emit(jsonio.dumps(outcome.to_json(), indent=1) + "\n", args.output)
    else:
        emit(outcome.line + "\n", args.output)
    return outcome.exit_code


def spec_from_args(args: argparse.Namespace) -> Spec:
    if args.timeout <= 0 or args.pg_timeout <= 0:
        raise InputError("--timeout/--pg-timeout", "must be positive")
    return Spec(case=args.case, nproc=args.nproc, backend=backends.chosen(args.backend).name,
                transport=args.transport, size=args.size, fix=args.fix, timeout=args.timeout,
                pg_timeout=args.pg_timeout, microbatches=args.microbatches,
                variable_seq_lengths=None if args.variable_seq_lengths is None
                else args.variable_seq_lengths == "true")


def _predict(plan, fmt: str, output: str | None, nccl_log: list[Path]) -> int:
    conditions = plan.conditions()
    if conditions is None:
        raise InputError("--predict", f"the wait-for model is NCCL's; it says nothing about "
                         f"this run ({plan.title})")
    if nccl_log and conditions.transport == "gloo":
        raise InputError("--nccl-log", f"an NCCL log says nothing about this gloo run ({plan.title})")
    # No config pins a torch here: the log's own NCCL release is the one its bounds are read for.
    cluster = ncclbounds.from_logs(nccl_log, conditions.transport, None)
    if cluster is not None:
        conditions = conditions.with_bounds(cluster.transports)
    analysis = analyze(plan.programs, conditions)
    verdicts = deadlock(lambda c: analyze(plan.programs, c), conditions).to_json()
    decided = prediction_verdict(verdicts, analysis.mismatched_pairs)
    if fmt == "json":
        emit(jsonio.dumps({"case": plan.title, **analysis.to_json(), "deadlock": verdicts,
                         "verdict": decided.to_json(),
                         "nccl_log": cluster.to_json() if cluster else None}, indent=1) + "\n",
             output)
    else:
        emit("\n".join([f"{plan.title}: {decided.headline}", *deadlock_lines(verdicts),
                        *([cluster.words()] if cluster else []),
                        f"the replay under the case's conditions: {analysis.summary()}"]) + "\n",
             output)
    return decided.exit_code
