"""`p2paudit simulate --config run.sh`: run the real pipeline schedule on CPU at the script's
pipeline size (the pinned megatron-core's, or for a torchtitan launch torch's own pipelining
schedule), recorded, and say whether its op order would hang on the cluster the script describes.

Exit status: 1 when a hang is predicted, a fired site was not predicted by the scan, the real run
would stop at start-up, the schedule failed, or the answer is inconclusive (an unknown size, or
open conditions under which the order hangs one way and completes the other); 0 when the order
completes; 2 on bad input.
"""

from __future__ import annotations

import argparse
import shlex
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from auditor.commands import options
from auditor.commands.output import emit_report
from auditor.report import formats
from auditor.config.coerce import overrides_from
from auditor.dynamic.trace import read_trace_dir
from auditor.analysis.replayverdict import simulation_verdict
from auditor.analysis.waitfor.transports import transport_names
from auditor.errors import EXIT_FINDINGS, InputError
from auditor.scan import ScanInputs, read_config, release_choice, run_scan
from auditor.simulate import machine, predict, titan_plan
from auditor.simulate.plan import SimulationPlan, plan
from auditor.simulate.run import run as run_schedule


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_config(parser)
    options.add_command(parser)
    options.add_targets(parser, "framework sources, as for scan (default: the script's `name==X` "
                                "comments); megatron-core's is the schedule that runs")
    options.add_torch(parser)
    options.add_set(parser, "override an effective config value (repeatable), e.g. hidden_size=N")
    parser.add_argument("--microbatches", type=int, metavar="N",
                        help="micro-batches to run (default: the config's global / (micro x DP))")
    parser.add_argument("--transport", choices=transport_names(),
                        help="the NCCL transport between neighbouring stages (default: by the "
                             "script's nodes: node = P2P or SHM, net = NET/Socket or NET/IB); "
                             "its bound in rules/nccl.toml decides 'will deadlock here'")
    options.add_nccl_log(parser)
    options.add_trace(parser, "keep the recorded trace here (an empty or new directory)", "--trace-dir",
                      dest="trace_dir", type=Path)
    options.add_format(parser, *options.report_format("simulate"))
    options.add_output(parser)


def run(args: argparse.Namespace) -> int:
    options.check_config(args.config)
    if args.microbatches is not None and args.microbatches < 1:
        raise InputError("--microbatches", f"must be >= 1, not {args.microbatches}")
    if args.trace_dir is not None and (args.trace_dir.exists() and (
            not args.trace_dir.is_dir() or any(args.trace_dir.iterdir()))):
        raise InputError(str(args.trace_dir), "--trace-dir must be an empty directory or not "
                                              "exist yet")
    # Without --target: the newest combination of the releases the scan would judge the run
    # across; one simulation runs one schedule.
    command = args.training_command
    text, choice = release_choice(args.config, command) if not args.target else (None, None)
    targets, chosen = args.target, ""
    if choice is not None:
        targets = choice.targets(choice.combinations[0])
        chosen = (f"no release stated: simulated on the newest releases the rules verify that fit "
                  f"together, {', '.join(targets)} (--target NAME==VERSION gives the run's)")
    inputs = ScanInputs(args.config, targets, overrides_from(args.set), args.torch, command=command)
    launch, srcs = read_config(args.config, targets, command, text=text, planned=choice is not None)
    doc = run_scan(inputs, (launch, srcs))
    if chosen:
        doc["config"]["release_choice"] = chosen
    planner = titan_plan.plan if titan_plan.applies(srcs) else plan
    p = predict.with_transport(planner(doc, launch, srcs, args.microbatches), args.transport)
    args.cluster = predict.cluster(doc, p, args.nccl_log)
    if p.unknown:
        return _not_run(doc, p, args, "unknown",
                        "not run: the message size decides the hang and is unknown")
    if p.schedule_stops:
        return _not_run(doc, p, args, "startup", f"not simulated; {p.runner} stops the run "
                        "before the schedule: " + p.schedule_stops[0])
    pp, vpp = p.get("pipeline_size"), p.get("virtual_stages") or 1
    too_big = machine.refusal(pp, pp * vpp, p.get("microbatches"), p.message_bytes or 0)
    if too_big is not None:
        return _not_run(doc, p, args, "memory", too_big)
    if args.trace_dir is not None:
        args.trace_dir.mkdir(parents=True, exist_ok=True)
        return _simulate(doc, p, args, args.trace_dir)
    with tempfile.TemporaryDirectory(prefix="p2paudit-simulate-") as workdir:
        return _simulate(doc, p, args, Path(workdir))


def missing_module_step(line: str) -> str:
    """The step for a schedule that stopped on an import this Python lacks: the release runs in
    p2paudit's own interpreter, so the module goes there (megatron-core imports numpy, which a
    venv with only p2paudit and torch lacks)."""
    found = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", line)
    if found is None:
        return ""
    top = found.group(1).split(".")[0]
    extra = " (or pip install 'p2paudit[record]')" if top == "numpy" else ""
    return f"; install it into the Python running p2paudit: {sys.executable} -m pip install {top}{extra}"


def _simulate(doc: dict[str, Any], p: SimulationPlan, args: argparse.Namespace, workdir: Path) -> int:
    recorded = run_schedule(p, workdir)
    refused = next((r["refused"] for r in recorded.results if r.get("refused")), None)
    if recorded.status != 0 and refused is None:
        tail = [ln for ln in recorded.output.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        print(f"p2paudit simulate: FAILED: {p.runner}'s schedule stopped with status "
              f"{recorded.status} after {recorded.seconds:.1f} s: {recorded.killed or tail[0]}"
              f"{missing_module_step(tail[0])}", file=sys.stderr)
        return EXIT_FINDINGS
    if refused is not None:  # torch's schedule constructor raised, as in the real run; a peer's
        # crash beside it is its echo
        p.startup_errors.append(f"torch refuses the schedule: {refused}")
        return _not_run(doc, p, args, "startup", "not simulated; the run stops before its first "
                        f"step: torch refuses the schedule: {refused}")
    trace = read_trace_dir(recorded.trace)
    stopped = {r: rt.stopped for r, rt in trace.ranks.items() if rt.stopped is not None}
    if stopped:  # the schedule ran, but the order it issued is not all in the trace
        return _not_run(doc, p, args, "incomplete", f"the recorded order is incomplete: rank(s) "
                        f"{', '.join(map(str, stopped))}: {next(iter(stopped.values()))}")
    schedules = sorted({r["schedule"] for r in recorded.results})
    results = predict.replays(doc, trace, p, args.cluster)
    out = predict.joined(doc, trace, predict.pick(results))
    sim = predict.simulation(out, p, results, ", ".join(schedules), recorded.seconds, args.cluster)
    sim["stood_in"] = sorted({m for r in recorded.results for m in r.get("stood_in", [])})
    out["simulation"] = sim
    decided = simulation_verdict(sim)
    out["verdict"] = decided.to_json()
    emit_report(out, "simulate", args.format, args.output, formats.Context(config=args.config))
    print(f"p2paudit simulate: {decided.headline}", file=sys.stderr)
    if args.trace_dir is not None:  # the ranks' files are one level down, beside spec.json
        print(f"p2paudit simulate: the recorded schedule is kept: p2paudit report --trace "
              f"{shlex.quote(str(recorded.trace))}", file=sys.stderr)
    return decided.exit_code


def _not_run(doc: dict[str, Any], p: SimulationPlan, args: argparse.Namespace, why: str,
             words: str) -> int:
    """The answer without a (usable) run: a size unknown, a run that does not start (the scan's
    start-up errors), one this machine cannot hold, or one whose trace stopped early (`why`:
    unknown | startup | memory | incomplete)."""
    sim = {"verdict": "inconclusive", "hang": None, "runner": p.runner, "message_bytes": p.message_bytes,
           "message": p.size_words(), "inputs": p.to_json(), "unknown": p.unknown,
           "not_run": why, "hypothetical": words,
           "ranks": [], "schedule": None, "microbatches": p.get("microbatches"),
           "conditions": None, "cycle_ranks": [], "blocked": {}, "fired": [],
           "unpredicted": [], "unfired": [], "mismatched_pairs": [],
           "startup_errors": p.startup_errors}
    decided = simulation_verdict(sim)
    emit_report({**doc, "simulation": sim, "verdict": decided.to_json()}, "simulate", args.format,
                args.output, formats.Context(config=args.config))
    print(f"p2paudit simulate: {decided.headline}", file=sys.stderr)
    return decided.exit_code
