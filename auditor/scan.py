"""The static pipeline for one launch script: launch -> effective config -> sites -> call graph
-> reachability -> verdicts and findings, as one scan document (the output contract)."""

from __future__ import annotations

import ast
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from auditor.analysis import commandcases, own_sites, schedule_reach, settingcases, verdict
from auditor.analysis.backend import PIPELINE_BACKEND
from auditor.analysis.batching import (
    coalesces_key,
    effectively_batched,
    site_doc,
    site_findings,
)
from auditor.config import releases
from auditor.config.checkout_release import settled_by_targets
from auditor.config.derive import derive
from auditor.config.effective import EffectiveConfig
from auditor.config.envlint import lint
from auditor.config.expr import UNKNOWN
from auditor.config.frontends.bridge_recipe_names import check_recipe
from auditor.config.frontends.swift_fields import check_swift_flags
from auditor.config.launch import (
    NotAPipelineRun,
    launch_environ,
    parse_launch,
    read_script,
    refuse_not_pipeline,
    world_of,
)
from auditor.config.launch_options import check as launcher_refusals
from auditor.config.model import LaunchConfig
from auditor.config.runconfig import RunConfig
from auditor.config.pyenv import read_entry
from auditor.config.settings import check_settings
from auditor.config.entry_p2p_calls import direct_entry
from auditor.config.pipelining_script import own_entry, script_entry, script_sources
from auditor.config.submodule_copy import unread_submodule
from auditor.config.titan import read_job_config, torch_scope, with_pipelining_torch
from auditor.errors import InputError
from auditor.progress import Progress
from auditor.report import document
from auditor.rulebook import files as rulebook_files
from auditor.rulebook import interpreter
from auditor.rulebook.apis import BatchWrapper, batch_wrappers
from auditor.rulebook.frameworks import frameworks
from auditor.sources import SourceSet, resolve
from auditor.static.analyze import collector_paused
from auditor.static.interp.callgraph import Interpreter
from auditor.static.inventory import inventory
from auditor.static.ir.build import build as build_ir
from auditor.static.interp.program import Program
from auditor.static.interp.reach import BlockedCallee, Reachability, SiteReach, site_reach
from auditor.static.sites.sites import Site, sites_with_nodes
from auditor.static.sites.sites import table as site_table
from auditor.static.source import Source


@dataclass
class ScanInputs:
    config_path: str
    targets: list[str] | None = None
    overrides: dict[str, str] | None = None
    torch_version: str | None = None
    entries: list[str] | None = None  # MODULE[:QUALNAME], in order
    jobs: int | None = None
    progress: bool = False
    matrix_key: str | None = None  # the key `--matrix` varies (in `overrides` too)
    command: str | None = None  # --command: the training command line, when the script hides it
    which: int | None = None  # the training command judged, where the script runs several; None: each
    text: str | None = None  # the script's text, once read (a pipe gives it once)
    # the keys of `overrides` _cases set (a rules file's [[setting_cases]]), not the user
    case_keys: frozenset[str] = frozenset()
    # where given, the configs this scan reads (read_key), for a caller that plans from the
    # scan's own read (fix.pointer): the script is read once
    reads: dict[tuple[tuple[str, ...], int], Read] | None = None


Read = tuple[LaunchConfig, list[SourceSet]]  # what read_config gives


def read_key(targets: list[str] | None, which: int = 0) -> tuple[tuple[str, ...], int]:
    """The key of `ScanInputs.reads` for a read of these targets and training command. Whether
    the targets are `planned` is no part of it: that changes only what the launch says of its
    releases (its diagnostics), not the launch or the sources read."""
    return tuple(targets or ()), which


def resolve_targets(launch: LaunchConfig, targets: list[str] | None) -> list[SourceSet]:
    """--target as given; else `name==X` comments in the script; else installed distributions."""
    out = _distinct([resolve(t) for t in targets]) if targets else _stated_targets(launch)
    for src in out:
        if src.kind == "dir":
            src.shown = _from_here(src.root)
    return out


def _stated_targets(launch: LaunchConfig) -> list[SourceSet]:
    out = []
    for name in launch.stack.distributions:
        pin = launch.pins.get(name)
        tree = launch.source_dirs.get(name)  # the tree the run imports (config/source_tree.py)
        try:
            out.append(resolve(str(tree) if tree is not None else f"{name}=={pin}" if pin else name))
            out[-1].stated = tree is not None or bool(pin)
        except InputError as exc:
            if pin:
                raise
            raise InputError(
                launch.path,
                f"which {name} does this run use? {exc.cause}; pass --target {name}==VERSION "
                f"or write `# {name}==VERSION` in the script",
            ) from None
    return out


def _from_here(root: Path) -> str | None:
    """`root` relative to the directory the scan runs in, where it lies below it (`mcore_adapter`
    at a checkout's root, `ROLL/mcore_adapter` above it): an absolute path there wraps the
    header's targets line past the first screen at 80 columns (issue 25). Elsewhere None (its
    absolute path): a name from the script's checkout root would read as the copy under the
    current folder when the scan runs from another checkout."""
    here = Path.cwd().resolve()
    tree = root.resolve()
    return str(tree.relative_to(here)) if tree != here and tree.is_relative_to(here) else None


def _distinct(srcs: list[SourceSet]) -> list[SourceSet]:
    """Each target once: the same files given twice (a wheel and its copy unpack to one folder)
    are one target, not twice the sites; one distribution from two places is bad input (which
    copy does the run use?)."""
    out: dict[Path, SourceSet] = {}
    for src in srcs:
        out.setdefault(src.root.resolve(), src)
    by_name: dict[str, SourceSet] = {}
    for src in out.values():
        other = by_name.setdefault(src.name, src)
        if other is not src and src.recognised:
            raise InputError(src.origin, f"{src.name} {src.version or '(unversioned)'} is a second copy "
                                         f"of {src.name}: --target {other.origin} gives "
                                         f"{other.version or 'one'} already; give the one the run uses")
    return list(out.values())


def interpreter_config(effective: EffectiveConfig) -> dict[str, Any]:
    return {k: v.value for k, v in effective.values.items() if v.value is not UNKNOWN}


def entry_code(spec: str) -> str:
    """`--entry MODULE[:QUALNAME]` as entry code: import the module, call the function (an
    instance whose __init__ never ran for a method), every argument unknown."""
    module, _, qualname = spec.partition(":")
    if not module or not all(p.isidentifier() for p in module.split(".")):
        raise InputError(spec, "--entry wants MODULE or MODULE:QUALNAME, e.g. mytrain:Trainer.step")
    lines = [f"import {module} as _m"]
    if qualname:
        parts = qualname.split(".")
        if not all(p.isidentifier() for p in parts):
            raise InputError(spec, "--entry wants MODULE:QUALNAME with a dotted Python name")
        if len(parts) == 1:
            lines.append(f"P2PAUDIT_CALL(_m.{parts[0]})")
        else:
            owner = ".".join(parts[:-1])
            lines.append(f"P2PAUDIT_CALL(P2PAUDIT_INSTANCE(_m.{owner}).{parts[-1]})")
    return "\n".join(lines) + "\n"


def read_config(config_path: str, targets: list[str] | None, command: str | None = None,
                text: str | None = None, which: int = 0,
                planned: bool = False) -> Read:
    """The launch script and the framework sources its run uses. `text`: the script's, where the
    caller read it already (a pipe, `--config /dev/stdin`, gives its text once). `which`: the
    training command, where the script runs several. `planned`: the targets are a combination of
    releases chosen for a run that states none (config.releases), not the user's `--target`, so
    what a checkout says of its release still stands."""
    text = read_script(config_path) if text is None else text
    environ = launch_environ()
    launch = parse_launch(text, config_path, environ=environ, command=command, which=which)
    refuse_not_pipeline(launch, _stated(targets))  # `swift sft`, `megatron export`: nothing to resolve
    # torchtitan's schedules, or a script's own torch.distributed.pipelining: torch's source too
    srcs = with_pipelining_torch(launch, script_sources(launch, resolve_targets(launch, targets)))
    versions = {s.name: s.version for s in srcs}
    if versions.get("megatron-core"):
        # Megatron-LM's flags are checked against the parser of the release the run uses.
        launch = parse_launch(text, config_path, environ=environ, command=command, which=which,
                              megatron_version=versions["megatron-core"],
                              parser_roots=tuple(s.root for s in srcs if s.name == "megatron-core"))
    if targets and not planned:
        settled_by_targets(launch, srcs)  # --target, not a checkout's version file, says the release
    read_entry(launch)  # what the entry script sets from Python joins the script's environment
    read_job_config(launch, srcs)  # torchtitan's TOML or config-registry function, from its release
    check_recipe(launch, srcs, planned)  # a Megatron-Bridge recipe that no release defines
    check_swift_flags(launch, srcs, planned)  # a flag no field of the release's ms-swift arguments defines
    return launch, srcs


def run_scan(inputs: ScanInputs,
             read: Read | None = None) -> dict[str, Any]:
    """`read`: what `read_config` gave for these inputs, where the caller needs it too (simulate,
    fix: they plan from this one config). Otherwise a setting the verdict needs that the script
    leaves unknown (`PP=$6`) is judged at the values of its `[[setting_cases]]` (_cases); see
    _scan_releases for the releases judged. A script that runs several training commands (a
    loop over parallel sizes) is judged on each (_commands)."""
    if read is not None:
        return _scan_releases(inputs, read)
    if inputs.which is None:
        return _commands(inputs)
    return _command(inputs, [CASE_SCANS])


def _command(inputs: ScanInputs, budget: list[int]) -> dict[str, Any]:
    """One training command judged, its settings' cases taken from `budget` (_cases)."""
    doc = _scan_releases(inputs)
    return _cases(inputs, doc, budget) or doc


def _commands(inputs: ScanInputs) -> dict[str, Any]:
    """Each training command the script runs, judged (`--command` gives one): the document of the
    worst verdict (auditor.analysis.commandcases), every command's in `config.command_basis`.
    The commands share one budget of case scans (CASE_SCANS): a script of four commands each
    open on the same setting costs what one does plus its own scans, not four times the cases
    (Megatron-Bridge examples/models/gpt_oss/inference.sh); past it a command is judged at its
    own settings and says so (_out_of_budget). A command that runs no pipeline is one command's
    class (NOT A PIPELINE RUN, judged beside the others: a forward-only generate at pipeline size 1
    beside the same program at 2 still sends activations there); the script is no pipeline run
    only where every command is none. A long scan says how far it is on stderr."""
    text = read_script(inputs.config_path) if inputs.text is None else inputs.text
    count = 1 if inputs.command is not None else parse_launch(
        text, inputs.config_path, environ=launch_environ()).commands
    budget, at = [CASE_SCANS], [0]
    with Progress(f"scanning {os.path.basename(inputs.config_path)}",
                  how_far=lambda: (f"command {at[0] + 1} of {count}, "
                                   f"{CASE_SCANS - budget[0]} of {CASE_SCANS} case scans used")):
        docs, unpipelined = [], []
        for k in range(count):
            at[0] = k
            try:
                docs.append(_command(replace(inputs, which=k, text=text), budget))
            except NotAPipelineRun as exc:  # this command's class; the others are judged still
                unpipelined.append(exc)
                docs.append(_not_pipeline_command(inputs, exc))
    if len(unpipelined) == count and (count == 1 or all(d["verdict"]["status"] == "not-pipeline" for d in docs)):
        raise unpipelined[0]  # every command runs no pipeline, and each starts: the script runs none
    if count == 1:
        return docs[0]
    out = commandcases.merged(docs)
    verdict.finish(out)
    return out


def _not_pipeline_command(inputs: ScanInputs, exc: NotAPipelineRun) -> dict[str, Any]:
    """The document of one command, among others that run a pipeline, that runs none (a
    generate program at pipeline size 1 beside the same program at 2: Megatron-Bridge
    examples/models/qwen/qwen3_vl/inference.sh), its pipeline size where its entry sets it."""
    said = verdict.unpipelined(exc.what, exc.config, inputs.torch_version)
    doc = unscanned_document(inputs.config_path, said, exc.config)
    if said.status == "findings" and exc.config is not None:  # its launcher refuses it: a start-up error
        doc["findings"] += [f.to_json() for f in verdict.launcher_refusals(exc.config, inputs.torch_version)]
    size = None if exc.config is None else exc.config.entry_values.get("pipeline_model_parallel_size")
    if size is not None and size[0] is not UNKNOWN:
        doc["config"]["effective"] = {"pipeline_model_parallel_size": size[0]}
    return doc


# How many scans, past the commands' own, the settings' cases may take for one script (all its
# training commands together): a case still undecided is split on the next setting only while
# this lasts (then it stays undecided, naming its own step and the budget: _out_of_budget).
CASE_SCANS = 16
BUDGET_KIND = "scan.case-budget"  # the finding that says a split was not judged for the budget


def _cases(inputs: ScanInputs, doc: dict[str, Any], budget: list[int],
           within: bool = False) -> dict[str, Any] | None:
    """Where the run is undecided on a setting nothing states (not --set, not the script) that
    the verdict rests on, a scan at each of its rules' case values (rules/*.toml
    [[setting_cases]]), each case still undecided split on the next such setting in turn
    (settingcases.next_key): the document of the first case past the first where they agree,
    else of the first case that stays undecided (its step decides it), else the run's own; every
    case's verdict in `config.setting_basis`, which the verdict reads (decided only where the
    cases that start agree); None where no such setting is open."""
    run = RunConfig.from_json(doc.get("config", {}))
    if doc["verdict"]["status"] != "inconclusive":
        return None
    tables = [e for f in frameworks() for e in rulebook_files.load(f.name).table("setting_cases")]
    table = settingcases.next_key(doc["verdict"], run.needs or [],
                                  lambda k: run.is_open(k) and k not in (inputs.overrides or {}), tables,
                                  within=within)
    if table is None:
        return None
    if budget[0] < len(table["values"]):
        return _out_of_budget(doc, table)
    budget[0] -= len(table["values"])
    key = table["key"]
    docs: list[dict[str, Any]] = []
    cases = []
    stuck = None  # the value of a case that keeps the split undecided, whatever the others give
    for v in table["values"]:
        if stuck is not None:  # not scanned: no value of this one can settle the split
            budget[0] += 1
            cases.append({"value": v, "status": "inconclusive", "starts": True, "skipped": True,
                          "headline": f"not judged: at {key}={stuck} the run stays undecided whatever "
                                      f"{key}={v} gives"})
            continue
        case = replace(inputs, overrides={**(inputs.overrides or {}), key: str(v)},
                       case_keys=inputs.case_keys | {key})
        one = _scan_releases(case)
        d = _cases(case, one, budget, within=True) or one
        docs.append(d)
        stuck = v if _stays_undecided(d, case.overrides, tables) else None
        cases.append({"value": v, "status": d["verdict"]["status"], "headline": d["verdict"]["headline"],
                      "starts": not settingcases.does_not_start(d["verdict"]),
                      **({"split": d["config"]["setting_basis"]} if "setting_basis" in d["config"] else {})})
    basis = {"key": key, "why": table["why"], "stated": run.provenance(key),
             "cases": cases}
    # Shown: a case that starts, past the first (PP 2 shows the pipeline's sites; PP 1 has none).
    shown = next((k for k in [*range(1, len(cases)), 0] if cases[k]["starts"]), 0)
    unsure = settingcases.undecided_case(basis)
    if not settingcases.settled(basis):
        shown = unsure if unsure is not None and not settingcases.disagree(basis) else -1
    out = docs[shown] if shown >= 0 else doc
    out["config"]["setting_basis"] = basis
    if out is not doc:  # the case's value stands for all of them, not for a --set
        out["config"]["provenance"][key] = (
            f"not known statically ({basis['stated']}); judged at each of "
            f"{', '.join(str(c['value']) for c in cases)}: this document is the case {key}={cases[shown]['value']}")
    verdict.finish(out)
    return out


def _stays_undecided(doc: dict[str, Any], overrides: dict[str, str] | None, tables: list[dict[str, Any]]) -> bool:
    """A case that starts and stays undecided on something no setting's cases split (an undecided
    entry naming none that is open: the pipeline layout a checkpoint gives, the torch backend):
    the split it is a case of cannot settle (settingcases.settled), whatever its other values give."""
    run = RunConfig.from_json(doc.get("config", {}))
    if doc["verdict"]["status"] != "inconclusive" or settingcases.does_not_start(doc["verdict"]):
        return False
    keys = [t["key"] for t in tables if run.is_open(t["key"]) and t["key"] not in (overrides or {})]
    return any(not any(re.search(rf"\b{re.escape(k)}\b", f"{u.get('what', '')} {u.get('decide', '')}") for k in keys)
               for u in doc["verdict"].get("undecided") or [])


def _out_of_budget(doc: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """`doc`, undecided on `table`'s setting, whose cases the script's budget no longer covers:
    it stays undecided (fail closed), saying that it was not judged for the budget and the
    --set that decides it."""
    key, values = table["key"], ", ".join(str(v) for v in table["values"])
    doc.setdefault("findings", []).append({
        "kind": BUDGET_KIND, "severity": "info", "fix": "", "site_ids": [],
        "where": f"{(doc.get('launch') or {}).get('path', '')}:{(doc.get('launch') or {}).get('line', '')}",
        "message": (f"not judged: budget: {key} is not known statically and its cases ({values}) "
                    f"were not scanned, the script's {CASE_SCANS} case scans being spent"),
        "detail": {"undecided": f"not judged: budget ({key} at each of {values}: the script's "
                                f"{CASE_SCANS} case scans are spent on its earlier commands or cases)",
                   "decide": f"--set {key}=VALUE"}})
    verdict.finish(doc)
    return doc


def _scan_releases(inputs: ScanInputs,
                   read: Read | None = None) -> dict[str, Any]:
    """`read`: what `read_config` gave for these inputs, where the caller needs it too. Without
    --target, a run whose script states not every release of its stack is scanned once per
    combination of releases the rules cover (config.releases), and the documents merged: the
    newest combination's, with every combination's verdict in `config.release_basis`, which the
    verdict reads (a verdict decided only where they all agree)."""
    which = inputs.which or 0
    given = _given_releases(inputs.targets) if read is None else {}
    if read is None and (not inputs.targets or given):
        text, choice = release_choice(inputs.config_path, inputs.command, which, inputs.text, given)
        if choice is not None and (not given or set(given) & set(choice.combinations[0])):
            started = time.perf_counter()
            docs = [_scan_one(inputs, _read(inputs, [*(inputs.targets or []), *choice.targets(
                {n: v for n, v in combo.items() if n not in given})], text, which, planned=not given))
                    for combo in choice.combinations]
            return _merged(docs, choice, time.perf_counter() - started)
        read = _read(inputs, inputs.targets, text, which)
    return _scan_one(inputs, read or _read(inputs, inputs.targets, inputs.text, which))


def _read(inputs: ScanInputs, targets: list[str] | None, text: str | None, which: int,
          planned: bool = False) -> Read:
    """read_config for `inputs`, kept in `inputs.reads` where its caller asks for it."""
    read = read_config(inputs.config_path, targets, inputs.command, text, which, planned)
    if inputs.reads is not None:
        inputs.reads.setdefault(read_key(targets, which), read)
    return read


def _stated(targets: list[str] | None) -> dict[str, str]:
    """The releases `--target NAME==VERSION` states, as written (nothing resolved or fetched)."""
    return {canonicalize_name(t.partition("==")[0]): t.partition("==")[2].strip()
            for t in targets or [] if "==" in t and t.partition("==")[2].strip()}


def _given_releases(targets: list[str] | None) -> dict[str, SourceSet]:
    """The releases `--target`s state (`NAME==VERSION`, a wheel, a versioned tree): where they
    give part of the run's stack, the rest is chosen as for a script stating that part."""
    out: dict[str, SourceSet] = {}
    for t in targets or []:
        src = resolve(t)
        if src.recognised and src.version:
            out[src.name] = src
    return out


def release_choice(config_path: str, command: str | None = None, which: int = 0,
                   text: str | None = None,
                   given: dict[str, SourceSet] | None = None) -> tuple[str, releases.Plan | None]:
    """The script's text (read once: a pipe gives it once) and the combinations of releases a
    run stating not every release of its stack is judged on (config.releases); None where it
    states them all. `given`: the releases --target states, as if the script pinned them."""
    text = read_script(config_path) if text is None else text
    launch = parse_launch(text, config_path, environ=launch_environ(), command=command, which=which)
    refuse_not_pipeline(launch, {name: str(src.version) for name, src in (given or {}).items()})
    for name, src in (given or {}).items():
        launch.pins[name] = str(src.version)
        if src.kind == "dir":  # a tree the run imports (ROLL's mcore_adapter/): read, not fetched
            launch.source_dirs[name] = src.root
    return text, releases.plan(launch)


def _merged(docs: list[dict[str, Any]], choice: releases.Plan, seconds: float) -> dict[str, Any]:
    """The first (newest) combination's document, judged against the others' verdicts."""
    doc = docs[0]
    doc["config"]["release_basis"] = {**choice.to_json(), "combinations": [
        {"releases": combo, "status": other["verdict"]["status"], "headline": other["verdict"]["headline"]}
        for combo, other in zip(choice.combinations, docs)]}
    doc["analysis"]["seconds_all_releases"] = round(seconds, 3)
    verdict.finish(doc)
    return doc


def _scan_one(inputs: ScanInputs, read: tuple[LaunchConfig, list[SourceSet]]) -> dict[str, Any]:
    started = time.perf_counter()
    launch, srcs = read
    versions = {s.name: s.version for s in srcs}
    effective = derive(launch, versions, inputs.overrides, inputs.torch_version)
    invs = [inventory(s, jobs=inputs.jobs, progress=inputs.progress) for s in srcs]
    sites = [site for inv in invs for site in inv.sites]
    scope = torch_scope(launch, srcs)
    if scope is not None:  # torch's sites are its pipelining's
        outside = [s for s in sites if s.package == "torch" and not s.path.startswith(scope)]
        sites = [s for s in sites if s not in outside]
        if outside:
            effective.notes.append(f"{len(outside)} P2P site(s) of torch outside {', '.join(scope)} are not "
                                   f"this run's pipeline: not judged (rules/torchtitan.toml [torch_source])")
    rules, bound, generic = interpreter.load(versions)
    script = script_entry(launch)
    if inputs.entries:
        entry_specs = [(spec, entry_code(spec)) for spec in inputs.entries]
    elif script is not None:  # a script pipelining with torch itself: its own code is the entry
        entry_specs = [script]
    else:
        chosen = interpreter.entries_for(launch.launcher, bound, generic)
        runs = [(e, _runs(e, effective)) for e in chosen]
        entry_specs = [(e.name, e.code) for e, ok in runs if ok]
        effective.notes += [f"entry point {e.name} does not run: its rules' `when`, {e.when}, is false "
                            f"for this config (rules/{e.framework}.toml){_why_false(e, effective)}"
                            for e, ok in runs if not ok]
    own = None if inputs.entries or script is not None else own_entry(launch)
    direct = None if inputs.entries or script is not None or own is not None else direct_entry(launch)
    program = Program(srcs, jobs=inputs.jobs)
    try:
        interp = Interpreter(program, interpreter_config(effective), rules)
        with Progress("call graph from the entry points",
                      how_far=lambda: f"{len(interp.nodes)} functions reached"), collector_paused():
            starts = _run_entries(interp, program, srcs, entry_specs, bool(inputs.entries))
            starts += _run_own(interp, own) if own is not None else []
            starts += _run_own(interp, direct) if direct is not None else []
            reach = Reachability(interp, starts)
            results = _reach_all(interp, reach, program, sites)
    finally:
        program.close()
    wrappers = [batch_wrappers(r) for r in effective.torch_releases or (None,)]
    keys = {s.id: _coalesces_key(s, wrappers) for s in sites}
    unbatched = {s.id: effectively_batched(s, effective, keys[s.id]) for s in sites}
    needs = launch.stack.needs
    site_docs = [site_doc(s, results[s.id], effective, unbatched[s.id], keys[s.id], needs)
                 for s in sites]
    # the entry's own ops: judged on what its code does (analysis.own_sites), not on batch_p2p_comm
    own_root = next((s.root for s in srcs if own is not None and s.name == canonicalize_name(own[1])), None)
    own_docs = [d for d in site_docs if own is not None and own_root is not None
                and d["package"] == canonicalize_name(own[1])]
    own_findings = [] if own_root is None else own_sites.judge(own_docs, {s.id: s for s in sites}, own_root,
                                                              effective, keys)
    torch_version = effective.value("torch_version")
    findings = [*launch.diagnostics, *effective.findings, *launcher_refusals(launch, effective.torch_releases),
                *lint(launch, None if torch_version is UNKNOWN else torch_version)]
    backend = effective.value(PIPELINE_BACKEND)
    findings += site_findings([d for d in site_docs if d not in own_docs], unbatched, interp.patches,
                              backend in ("nccl", UNKNOWN))
    findings += own_findings
    findings += schedule_reach.own_unjudged(launch, own, site_docs) if own is not None else []
    if script is not None and not inputs.entries:
        findings += schedule_reach.schedule_unreached(launch, script[0], site_docs)
    unscheduled = None if inputs.entries or script is not None else schedule_reach.finding(launch, srcs, effective)
    findings += [unscheduled] if unscheduled is not None else []
    findings += unread_submodule(launch, srcs)  # a framework from a submodule not checked out here
    analyses = [inv.analysis for inv in invs]
    doc = document.build(srcs, site_docs, analyses, findings,
                         config=effective.record(needs).to_json())
    doc["launch"] = {"path": launch.path, "launcher": launch.launcher, "line": launch.command_line,
                     **world_of(launch, effective.values.get("world_size")),
                     **({"command": inputs.command} if inputs.command is not None else {}),
                     **({"entry_read": {"script": launch.script, "read": launch.script_read,
                                        **({"module": True} if launch.script_module else {})}}
                        if launch.script_read else {})}
    doc["entries"] = [name for name, _ in entry_specs] + [e[0] for e in (own, direct) if e is not None]
    doc["patches"] = [
        {"target": p.target, "replacement": p.replacement, "status": p.status,
         "installed_in": interp.nodes[p.node].short}
        for p in interp.patches if reach.status(p.node) != "no"
    ]
    doc["analysis"] = {
        "functions_interpreted": len(interp.nodes),
        # parsed by this run (the call graph's own, or the site inventory's just before it)
        "modules_parsed": program.parsed + program.fresh,
        "modules_cached": program.cached - program.fresh, "budget_exhausted": interp.exhausted,
        "budget_cuts": [c.to_json(interp.nodes) for c in interp.cuts],
        "unresolved_calls": sum(interp.unresolved.values()),
        "errors": [{"package": pkg, "path": e.path, "cause": e.cause} for pkg, e in program.errors],
        "seconds": round(time.perf_counter() - started, 3),
    }
    given = {k: "--set" for k in inputs.overrides or {} if k not in inputs.case_keys}
    check_settings({**given, **({inputs.matrix_key: "--matrix"} if inputs.matrix_key else {})}, doc,
                   launch.stack.names)
    verdict.finish(doc)
    return doc


def _runs(entry: interpreter.EntryPoint, effective: EffectiveConfig) -> bool:
    """Whether an entry point runs for this config: its `when` (rules [[entry_point]]) is not
    false; unknown runs it (a deepspeed pipeline engine of unknown PP)."""
    if entry.when is None:
        return True
    return effective.evaluate(entry.when) is not False


def _why_false(entry: interpreter.EntryPoint, effective: EffectiveConfig) -> str:
    """Where a `when` that is one config key got its value (the framework's own guard)."""
    value = effective.get(entry.when or "")
    return f": {value.provenance}" if value is not None else ""


def _coalesces_key(site: Site, wrappers: list[list[BatchWrapper]]) -> str:
    """The config key that says whether `site`'s batch runs coalesced, under each torch release's
    batch wrappers (one list per release the config was derived for); releases that disagree on
    it leave it unknown (`TORCH_RELEASES_DISAGREE`, a key no rule derives)."""
    keys = {coalesces_key(site, w) for w in wrappers}
    return keys.pop() if len(keys) == 1 else TORCH_RELEASES_DISAGREE


# The coalescing key of a site whose batch wrapper exists in some of the torch releases judged.
TORCH_RELEASES_DISAGREE = "torch_batch_wrapper (the torch releases judged disagree on it)"


def _run_entries(interp: Interpreter, program: Program, srcs: list[SourceSet],
                 entry_specs: list[tuple[str, str]], user_given: bool) -> list[int]:
    """Interpret each entry's code in order; the start nodes of reachability. A user's --entry
    must name a module of the targets and a function that resolves."""
    starts = []
    for i, (name, code) in enumerate(entry_specs):
        if user_given:
            _check_entry_module(name, program, srcs)
        module = f"<entry {i}>"
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            raise InputError(name, f"entry code does not parse: {exc.msg}") from None
        before = len(interp.nodes)
        starts.append(interp.run_module_ir(module, build_ir(tree, Source(code), module, False, {})))
        if user_given:
            _check_entry_resolved(name, interp, before)
    # Code a module runs on import ran too: its module-level node is a start of its own.
    starts += [n.id for n in interp.nodes if n.qualname == "<module>" and n.context == "import"]
    return starts


def _run_own(interp: Interpreter, own: tuple[str, str, str]) -> list[int]:
    """Interpret an entry issuing P2P itself (pipelining_script.own_entry), or calling a
    framework's P2P functions itself (entry_p2p_calls.direct_entry), as `__main__`, under
    the module name its source gives it, so that its functions are those whose sites were found:
    `__name__` is bound before its first line, its lines kept as written."""
    _, module, text = own
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []  # pyenv.read_entry says why the script is not read
    code = Source(text)
    # the sites the inventory found in it, as the same finder numbers them (its IR marks them)
    found = sites_with_nodes(code, tree, f"{module}.py", module, canonicalize_name(module), site_table())
    tree.body.insert(0, ast.parse("__name__ = '__main__'").body[0])
    return [interp.run_module_ir(module, build_ir(tree, code, module, False,
                                                  {id(node): site.id for site, node in found}))]


def _check_entry_module(spec: str, program: Program, srcs: list[SourceSet]) -> None:
    module = spec.partition(":")[0]
    if not program.has_module(module):
        shown = ", ".join(s.label for s in srcs)
        raise InputError(spec, f"--entry: module {module!r} is in none of the targets ({shown}); "
                               "add the package that holds it with --target")


def _check_entry_resolved(spec: str, interp: Interpreter, before: int) -> None:
    """The entry's function must have been interpreted: a misspelt name reaches nothing. It is
    the entry module's own function, or (inherited) a method of that name this entry reached
    first (`interp.nodes[before:]`): another module's function of that name does not count."""
    module, _, qualname = spec.partition(":")
    if not qualname:
        return
    last = qualname.rsplit(".", 1)[-1]
    if not any(n.module == module and n.qualname == qualname for n in interp.nodes) and \
            not any(n.qualname.endswith(f".{last}") for n in interp.nodes[before:]):
        raise InputError(spec, f"--entry: {qualname!r} is not defined in module "
                               f"{spec.partition(':')[0]!r} (nor inherited by it); check the spelling")


def _reach_all(interp: Interpreter, reach: Reachability, program: Program,
               sites: list[Site]) -> dict[str, SiteReach]:
    by_function: dict[str, list[str]] = {}
    module_of: dict[str, tuple[str, str]] = {}
    for s in sites:
        key = f"{s.module}.{s.function}"
        by_function.setdefault(key, []).append(s.id)
        module_of[key] = (s.module, s.function)
    first = site_reach(interp, reach, by_function, {})
    if all(r.reachable != "unknown" for r in first.values()):
        return first
    # Functions a false guard keeps from being called, walked on their own: what only they
    # reach is unreachable too.
    blocked_callees = []
    seen: set[str] = set()
    for b in interp.blocked:
        if reach.status(b.node) == "no":
            continue
        for function in sorted(b.functions - seen):
            seen.add(function)
            where = _split_function(program, function)
            node = interp.probe(*where) if where else None
            if node is not None:
                blocked_callees.append(BlockedCallee(function, b, Reachability(interp, [node])))
    # Functions whose sites nothing reached and nothing blocked: probe them on their own.
    probes = {}
    for key, ids in by_function.items():
        if all(first[i].reachable == "unknown" for i in ids):
            probes[key] = interp.probe(*module_of[key])
    return site_reach(interp, reach, by_function, probes, blocked_callees)


def _split_function(program: Program, function: str) -> tuple[str, str] | None:
    """`a.b.mod.Class.method` -> (`a.b.mod`, `Class.method`), by the longest known module."""
    parts = function.split(".")
    for i in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:i])
        if program.has_module(module) or program.loaded.get(module):
            return module, ".".join(parts[i:])
    return None


# The scan document of a run that is not scanned, for a decided reason: it trains no pipeline
# (`megatron export`, `swift sft`), or its training command could not be followed. The same
# contract as a scanned run's: tools reading `--format json` get a verdict, the launch as read and
# its findings, never a fragment.
def unscanned_document(path: str, result: verdict.RunVerdict,
                       launch: LaunchConfig | None = None) -> dict[str, Any]:
    """No target was resolved and no site read: `targets` and `sites` are empty by decision."""
    doc = document.build([], [], [], list(launch.diagnostics) if launch else [])
    doc["launch"] = {"path": path, **({"launcher": launch.launcher, "line": launch.command_line}
                                      if launch else {})}
    doc["verdict"] = result.to_json()
    return doc
