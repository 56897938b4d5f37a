"""`p2paudit simulate --config run.sh`: run the pinned megatron-core's real pipeline schedule on
CPU at the script's pipeline size, recorded, and say whether its op order would hang on the
cluster the script describes.

Exit status: 1 when a hang is predicted, a fired site was not predicted by the scan, the real run
would stop at start-up, the schedule failed, or the answer is inconclusive (an unknown size, or
open conditions under which the order hangs one way and completes the other); 0 when the order
completes; 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from auditor.commands import options
from auditor.commands.output import emit
from auditor.commands.report import render
from auditor.report.text import deadlock_lines, yes_no
from auditor.config.effective import overrides_from
from auditor.config.launch import read_launch
from auditor.dynamic.trace import read_trace_dir
from auditor.analysis import waitfor
from auditor.analysis.verdict import simulation_verdict
from auditor.errors import EXIT_FINDINGS, InputError
from auditor.scan import ScanInputs, resolve_targets, run_scan
from auditor.simulate import predict
from auditor.simulate.plan import Plan, plan
from auditor.simulate.run import run as run_schedule


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="RUN.SH", help="the launch script")
    parser.add_argument("--target", action="append", metavar="TARGET",
                        help="framework sources, as for scan (default: the script's "
                             "`name==X` comments); megatron-core's is the schedule that runs")
    parser.add_argument("--torch", metavar="VERSION",
                        help="the cluster's torch version (default: installed torch, else the "
                             "script's torch==X comment)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an effective config value (repeatable), e.g. hidden_size=N")
    parser.add_argument("--microbatches", type=int, metavar="N",
                        help="micro-batches to run (default: the config's global / (micro x DP))")
    parser.add_argument("--transport", choices=waitfor.transport_names(),
                        help="the NCCL transport between neighbouring stages (default: by the "
                             "script's nodes: node = P2P or SHM, net = NET/Socket or NET/IB); "
                             "its bound in rules/nccl.toml decides 'will deadlock here'")
    options.add_trace(parser, "keep the recorded trace here (an empty or new directory)", "--trace-dir",
                      dest="trace_dir", type=Path)
    parser.add_argument("--format", choices=("text", "json", "html"), default="text")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    if args.microbatches is not None and args.microbatches < 1:
        raise InputError("--microbatches", f"must be >= 1, not {args.microbatches}")
    if args.trace_dir is not None and (args.trace_dir.exists() and (
            not args.trace_dir.is_dir() or any(args.trace_dir.iterdir()))):
        raise InputError(str(args.trace_dir), "--trace-dir must be an empty directory or not "
                                              "exist yet")
    inputs = ScanInputs(args.config, args.target, overrides_from(args.set), args.torch)
    doc = run_scan(inputs)
    launch = read_launch(args.config)
    p = predict.with_transport(plan(doc, launch, resolve_targets(launch, args.target),
                                    args.microbatches), args.transport)
    if p.unknown:
        return _inconclusive(doc, p, args)
    if args.trace_dir is not None:
        args.trace_dir.mkdir(parents=True, exist_ok=True)
        return _simulate(doc, p, args, args.trace_dir)
    with tempfile.TemporaryDirectory(prefix="p2paudit-simulate-") as workdir:
        return _simulate(doc, p, args, Path(workdir))


def _simulate(doc: dict[str, Any], p: Plan, args: argparse.Namespace, workdir: Path) -> int:
    recorded = run_schedule(p, workdir)
    if recorded.status != 0:
        tail = [ln for ln in recorded.output.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        print(f"p2paudit simulate: FAILED: megatron-core's schedule stopped with status "
              f"{recorded.status} after {recorded.seconds:.1f} s: {tail[0]}", file=sys.stderr)
        return EXIT_FINDINGS
    trace = read_trace_dir(recorded.trace)
    schedules = sorted({json.loads(f.read_text())["schedule"]
                        for f in workdir.glob("result-*.json")})
    results = predict.replays(
        trace, p, doc.get("config", {}).get("effective", {}).get("torch_version"))
    out = predict.joined(doc, trace, predict.pick(results))
    sim = predict.simulation(out, p, results, ", ".join(schedules), recorded.seconds)
    out["simulation"] = sim
    decided = simulation_verdict(sim)
    out["verdict"] = decided.to_json()
    if args.format == "text":
        emit(text_report(sim, args.config, decided.headline), args.output)
    else:
        emit(render(out, args.format), args.output)
    print(f"p2paudit simulate: {decided.headline}", file=sys.stderr)
    return decided.exit_code


def _inconclusive(doc: dict[str, Any], p: Plan, args: argparse.Namespace) -> int:
    sim = {"verdict": "inconclusive", "hang": None, "message_bytes": None,
           "message": p.size_words(), "inputs": p.to_json(), "unknown": p.unknown,
           "hypothetical": "not run: the message size decides the hang and is unknown",
           "ranks": [], "schedule": None, "microbatches": p.get("microbatches"),
           "conditions": None, "cycle_ranks": [], "blocked": {}, "fired": [],
           "unpredicted": [], "unfired": [], "mismatched_pairs": [],
           "startup_errors": p.startup_errors}
    decided = simulation_verdict(sim)
    if args.format == "text":
        emit(text_report(sim, args.config, decided.headline), args.output)
    else:
        emit(render({**doc, "simulation": sim, "verdict": decided.to_json()}, args.format),
             args.output)
    print(f"p2paudit simulate: {decided.headline}", file=sys.stderr)
    return decided.exit_code


def text_report(sim: dict[str, Any], config: str, headline: str) -> str:
    lines = [f"p2paudit simulate {config}: megatron-core's own schedule on CPU (gloo), "
             f"recorded, replayed by the wait-for model"]
    if sim["ranks"]:
        lines.append(f"schedule: {sim['schedule']}, {len(sim['ranks'])} pipeline ranks"
                     + (f" x {sim['virtual_stages']} virtual stages" if sim.get("virtual_stages")
                        else "")
                     + f", {sim['microbatches']} micro-batches, ran in {sim['seconds']} s")
    lines.append(f"message: {sim['message']}")
    for name, v in sim["inputs"].items():
        shown = "none" if name == "virtual_stages" and v["value"] is None else \
            "unknown" if v["value"] is None else v["value"]
        lines.append(f"  {name} = {shown}: {v['provenance']}")
    for patch in sim.get("patches", []):
        state = "applied" if patch["applied"] else f"NOT applied ({patch['why']})"
        lines.append(f"patch {patch['installer']} of {patch['target']}: {state}")
    if sim.get("replays") and len(sim["replays"]) > 1:
        lines.append("replayed under each open condition:")
        lines += [f"  {r['words']}: will deadlock: {yes_no(r['hang'])}, can deadlock: "
                  f"{yes_no(r['can_deadlock'])}" for r in sim["replays"]]
    for error in sim["startup_errors"]:
        lines.append(f"ERROR the real run stops at start-up: {error}")
    lines.append("")
    lines.append(headline)
    if sim.get("deadlock"):
        lines += deadlock_lines(sim["deadlock"])
    for rank, words in sim["blocked"].items():
        lines.append(f"  rank {rank}: {words}")
    if sim["ranks"]:
        lines.append(f"sites: {len(sim['fired'])} fired, {len(sim['unpredicted'])} fired but "
                     f"not predicted, {len(sim['unfired'])} predicted but not fired")
        lines += [f"  fired: {sid}" for sid in sim["fired"]]
        lines += [f"  UNPREDICTED: {sid}" for sid in sim["unpredicted"]]
        lines += [f"  unfired: {u['site_id']}: {u['why']}" for u in sim["unfired"]]
    return "\n".join(lines) + "\n"
