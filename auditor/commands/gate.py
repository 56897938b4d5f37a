"""`p2paudit gate --config run.sh --baseline FILE --target megatron-core==NEW [...]`

Scans the launch script against the new release and fails (exit 1) when it adds a reachable
unbatched P2P site or a contradiction that the baseline scan does not have; 0 otherwise (a run
that is no pipeline run on the new release has nothing to compare: NOT A PIPELINE RUN, 0, unless
the baseline judged pipeline sites: then it fails), 2 on bad input. Targets not named on the command line, and the torch version, default to the baseline's,
so only what you change is compared.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from auditor import sources
from auditor.analysis.diff import finding_key
from auditor.analysis.gate import GateResult, check_scan, gate
from auditor.analysis import verdict
from auditor.analysis.verdict import gate_verdict
from auditor.commands import options
from auditor.commands.output import emit_report, emit_unscanned
from auditor.config.coerce import overrides_from
from auditor.config.launch import NotAPipelineRun, read_script
from auditor.config.settings import check_unscanned
from auditor.errors import InputError
from auditor.fix import plan, pointer
from auditor.fix.report import attach
from auditor.report import document
from auditor.scan import ScanInputs, run_scan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_config(parser)
    options.add_command(parser)
    parser.add_argument("--baseline", required=True, metavar="FILE",
                        help="scan document of the same script at a known-good release "
                             "(p2paudit scan --format json)")
    options.add_targets(parser, "the release(s) to check, e.g. megatron-core==0.19.2; packages not "
                                "named here keep the baseline's", default=[])
    options.add_torch(parser, "the cluster's torch version (default: the baseline's)")
    options.add_set(parser)
    options.add_entry(parser, "entry point(s) instead of the framework's")
    options.add_format(parser, *options.report_format("gate"))
    options.add_output(parser)
    options.add_jobs(parser)


def merged_targets(given: list[str], baseline: dict[str, Any]) -> list[str]:
    """The given targets, plus the baseline's for every package not given."""
    by_name = {sources.resolve(t).name: t for t in given}
    out = [by_name.pop(t["name"], t.get("origin")) for t in baseline["targets"]]
    return [t for t in out if t] + list(by_name.values())


def baseline_torch(baseline: dict[str, Any]) -> str | None:
    """The torch the baseline was judged on; None where it was judged across releases (then
    the new scan reads the script the same way)."""
    config = baseline.get("config", {})
    basis = config.get("torch_basis")
    if basis is not None:
        return basis.get("version")
    version = config.get("versions", {}).get("torch") or config.get("effective", {}).get("torch_version")
    return version if version not in (None, "unknown") else None


def check_same_script(baseline: dict[str, Any], path: str, config: str) -> None:
    """A gate compares one launch script across releases: a baseline scanned from another script
    (its file name) would pass or fail on that script's sites and inherit its torch."""
    made_from = (baseline.get("launch") or {}).get("path")
    if made_from and Path(made_from).name != Path(config).name:
        raise InputError(path, f"was scanned from {Path(made_from).name}, not {Path(config).name}: "
                               f"make this script's baseline (p2paudit scan --config {config} "
                               f"--format json -o BASELINE)")


def run(args: argparse.Namespace) -> int:
    options.check_config(args.config)
    baseline = document.load(args.baseline)
    check_scan(baseline, args.baseline)
    read_script(args.config)  # a script that cannot be read is refused first, as scan refuses it
    check_same_script(baseline, args.baseline, args.config)
    inputs = ScanInputs(args.config, merged_targets(args.target, baseline), overrides_from(args.set),
                        args.torch or baseline_torch(baseline), args.entry, args.jobs,
                        progress=sys.stderr.isatty(), command=args.training_command, reads={})
    # SARIF carries the verified patch itself as `fixes`: `fix`'s pipeline makes the scan and
    # verifies each cause's patch by a re-scan; the other formats name the command that does.
    try:
        if args.format == "sarif":
            new = attach(plan.make(inputs, simulate=False))
        else:
            new = run_scan(inputs)
    except NotAPipelineRun as exc:  # nothing to compare: passes unless the baseline had sites
        check_unscanned(dict.fromkeys(inputs.overrides or {}, "--set"), exc)
        return emit_unscanned(args, verdict.gate_not_pipeline(exc.what, baseline), exc.config)
    except InputError as exc:  # a target the baseline names, not found here: say whose it is
        if exc.subject not in {t.get("origin") for t in baseline["targets"]} - set(args.target or []):
            raise
        raise InputError(args.baseline, f"its target {exc.subject}: {exc.cause} (the baseline was "
                                        f"written elsewhere?): give the release with --target") from None
    pointer.point(new, inputs)
    result = gate(baseline, new)
    doc = gated_document(new, baseline, args.baseline, result)
    for f in [*doc["gate"]["new"], *doc["findings"]]:  # each failure a cause with a mechanical
        # remedy explains
        if not f.get("kind", "").startswith("gate-"):
            continue
        for key in ("fix_command", "patch"):
            found = pointer.for_sites(new, f.get("site_ids") or [], key)
            if found is not None:
                f[key] = found
    decided = gate_verdict(result.new, result.known, _label(doc), result.stops)
    doc["verdict"] = decided.to_json()
    emit_report(doc, "gate", args.format, args.output)
    if args.format != "text":
        print(decided.headline, file=sys.stderr)
    return decided.exit_code


def gated_document(new: dict[str, Any], baseline: dict[str, Any], path: str,
                   result: GateResult) -> dict[str, Any]:
    """The new scan with the gate's verdict: its findings first, each finding marked new or
    unchanged against the baseline (SARIF's baselineState)."""
    known = {finding_key(f) for f in baseline.get("findings", [])}
    findings = []
    for state, group in (("new", result.new), ("absent", result.fixed), ("new", result.notes)):
        for f in group:
            j = f.to_json()
            j["detail"] = {**j["detail"], "baseline": state}
            findings.append(j)
    for f in new.get("findings", []):
        findings.append({**f, "detail": {**f.get("detail", {}),
                                         "baseline": "unchanged" if finding_key(f) in known else "new"}})
    return {**new, "findings": findings,
            "gate": {**result.to_json(), "baseline": {"path": path, "targets": baseline["targets"]}}}


def _label(doc: dict[str, Any]) -> str:
    return ", ".join(sources.target_label(t) for t in doc["targets"])
