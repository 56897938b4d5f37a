"""The static pipeline for one launch script: launch -> effective config -> sites -> call graph
-> reachability -> verdicts and findings, as one scan document (the output contract)."""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.analysis import verdict
from auditor.config.derive import derive
from auditor.config.effective import EffectiveConfig
from auditor.config.envlint import lint
from auditor.config.expr import UNKNOWN
from auditor.config.launch import read_launch
from auditor.config.model import LaunchConfig
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.progress import Progress
from auditor.report import document
from auditor.sources import SourceSet, resolve
from auditor.rulebook import interpreter
from auditor.rulebook.apis import BatchWrapper, batch_wrappers
from auditor.rulebook.frameworks import needs_for, stack_for
from auditor.static.analyze import collector_paused
from auditor.static.callgraph import Interpreter
from auditor.static.inventory import inventory
from auditor.static.ir_build import build as build_ir
from auditor.static.program import Program
from auditor.static.reach import BlockedCallee, Reachability, SiteReach, site_reach
from auditor.static.sites import Site
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


def resolve_targets(launch: LaunchConfig, targets: list[str] | None) -> list[SourceSet]:
    """--target as given; else `name==X` comments in the script; else installed distributions."""
    if targets:
        return _distinct([resolve(t) for t in targets])
    out = []
    for name in stack_for(launch.launcher):
        pin = launch.pins.get(name)
        try:
            out.append(resolve(f"{name}=={pin}" if pin else name))
        except InputError as exc:
            if pin:
                raise
            raise InputError(
                launch.path,
                f"which {name} does this run use? {exc.cause}; pass --target {name}==VERSION "
                f"or write `# {name}==VERSION` in the script",
            ) from None
    return out


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


def read_config(config_path: str, targets: list[str] | None) -> tuple[LaunchConfig, list[SourceSet]]:
    """The launch script and the framework sources its run uses."""
    launch = read_launch(config_path)
    srcs = resolve_targets(launch, targets)
    versions = {s.name: s.version for s in srcs}
    if versions.get("megatron-core"):
        # Megatron-LM's flags are checked against the parser of the release the run uses.
        launch = read_launch(config_path, megatron_version=versions["megatron-core"])
    return launch, srcs


def run_scan(inputs: ScanInputs,
             read: tuple[LaunchConfig, list[SourceSet]] | None = None) -> dict[str, Any]:
    """`read`: what `read_config` gave for these inputs, where the caller needs it too."""
    started = time.perf_counter()
    launch, srcs = read or read_config(inputs.config_path, inputs.targets)
    versions = {s.name: s.version for s in srcs}
    effective = derive(launch, versions, inputs.overrides, inputs.torch_version)
    invs = [inventory(s, jobs=inputs.jobs, progress=inputs.progress) for s in srcs]
    sites = [site for inv in invs for site in inv.sites]
    rules, bound, generic = interpreter.load(versions)
    if inputs.entries:
        entry_specs = [(spec, entry_code(spec)) for spec in inputs.entries]
    else:
        entry_specs = [(e.name, e.code) for e in interpreter.entries_for(launch.launcher, bound, generic)]
    program = Program(srcs, jobs=inputs.jobs)
    try:
        interp = Interpreter(program, interpreter_config(effective), rules)
        with Progress("call graph from the entry points",
                      how_far=lambda: f"{len(interp.nodes)} functions reached"), collector_paused():
            starts = _run_entries(interp, program, srcs, entry_specs, bool(inputs.entries))
            reach = Reachability(interp, starts)
            results = _reach_all(interp, reach, program, sites)
    finally:
        program.close()
    wrappers = batch_wrappers(effective.versions.get("torch"))
    keys = {s.id: _coalesces_key(s, wrappers) for s in sites}
    unbatched = {s.id: effectively_batched(s, effective, keys[s.id]) for s in sites}
    needs = needs_for(launch.launcher)
    site_docs = [_site_doc(s, results[s.id], effective, unbatched[s.id], keys[s.id], needs)
                 for s in sites]
    findings = [*launch.diagnostics, *effective.findings, *lint(launch, effective.value("torch_version"))]
    findings += _site_findings(site_docs, unbatched, interp)
    analyses = [inv.analysis for inv in invs]
    doc = document.build(srcs, site_docs, analyses, findings,
                         config={**effective.to_json(), "needs": needs})
    doc["launch"] = {"path": launch.path, "launcher": launch.launcher, "line": launch.command_line,
                     "world_size": launch.world_size}
    doc["entries"] = [name for name, _ in entry_specs]
    doc["patches"] = [
        {"target": p.target, "replacement": p.replacement, "status": p.status,
         "installed_in": interp.nodes[p.node].short}
        for p in interp.patches if reach.status(p.node) != "no"
    ]
    doc["analysis"] = {
        "functions_interpreted": len(interp.nodes), "modules_parsed": program.parsed,
        "modules_cached": program.cached, "budget_exhausted": interp.exhausted,
        "budget_cuts": [c.to_json(interp.nodes) for c in interp.cuts],
        "unresolved_calls": sum(interp.unresolved.values()),
        "errors": [{"package": pkg, "path": e.path, "cause": e.cause} for pkg, e in program.errors],
        "seconds": round(time.perf_counter() - started, 3),
    }
    verdict.finish(doc)
    return doc


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


@dataclass(frozen=True)
class Unbatched:
    """Why an op runs outside any coalesced group at run time, and what to do about it."""

    cause: str
    fix: str
    detail: str = ""

    @property
    def words(self) -> str:
        return f"{self.cause}: {self.detail}" if self.detail else self.cause


ON_ITS_OWN = Unbatched(
    "issued on its own (not in batch_isend_irecv or a coalescing block)",
    "route this op through batch_isend_irecv (megatron: batch_p2p_comm=True covers the pipeline "
    "path), or initialise NCCL eagerly (init_process_group(device_id=...)) so no per-pair "
    "communicator is created lazily")
TORCH_OP_BY_OP = Unbatched(
    "torch will run this batch op by op",
    "unset TORCH_DISTRIBUTED_DEBUG (or use INFO), or upgrade to torch >= 2.11, where the debug "
    "wrapper forwards supportsCoalescing (pytorch PR #173599); `p2paudit repro fallback-1f1b` "
    "shows the failure and each fix")


WRAPPER_OP_BY_OP = Unbatched(
    "its batch runs op by op",
    "on this torch every all-send or all-recv batch of the schedule runs unbatched: initialise "
    "NCCL eagerly (init_process_group(device_id=...)) so that no per-pair communicator is "
    "created lazily, or use a torch whose pipelining coalesces every batch")

# How a batched site's op reaches torch: as a P2POp descriptor or as the batch call itself; both
# run coalesced only where torch coalesces batch_isend_irecv.
BATCH_ISSUED = ("descriptor", "batch")


def _coalesces_key(site: Site, wrappers: list[BatchWrapper]) -> str:
    """The config key that says whether this site's batch runs coalesced: a descriptor made
    where a wrapper issues the batches follows the wrapper; a batch call follows torch's."""
    for w in wrappers if site.issues == "descriptor" else ():
        if any(site.module == m or site.module.startswith(f"{m}.") for m in w.modules):
            return w.key
    return "torch_batch_coalesces"


def effectively_batched(site: Site, effective: EffectiveConfig, key: str) -> Unbatched | None:
    """None when the op runs inside a coalesced group at run time (or that is undecided, see
    `coalescing_undecided`), else why it does not; `key`: the site's `_coalesces_key`."""
    if not site.batched:
        return ON_ITS_OWN
    if site.issues in BATCH_ISSUED and effective.value(key) is False:
        how = TORCH_OP_BY_OP if key == "torch_batch_coalesces" else WRAPPER_OP_BY_OP
        return Unbatched(how.cause, how.fix, _provenance(effective, key))
    return None


def coalescing_undecided(site: Site, effective: EffectiveConfig, key: str) -> str:
    """Why it is unknown whether this batched op runs coalesced ("" when it is known); `key`:
    the site's `_coalesces_key`."""
    if not site.batched or site.issues not in BATCH_ISSUED or effective.value(key) is not UNKNOWN:
        return ""
    batch = "batch_isend_irecv" if key == "torch_batch_coalesces" else "batch"
    return f"whether torch runs this {batch} coalesced is undecided: " + _provenance(effective, key)


def _site_doc(site: Site, r: SiteReach, effective: EffectiveConfig, unbatched: Unbatched | None,
              key: str, needs: list[str]) -> dict[str, Any]:
    """`key`: the site's `_coalesces_key`; `needs`: the settings the batching rule reads for
    this run's stack; without batch_p2p_comm among them the stack has no batching setting, and
    an op issued on its own is neither a contradiction nor ok: its order decides, which scan
    does not replay."""
    d = site.to_json()
    undecided = coalescing_undecided(site, effective, key) \
        if unbatched is None and r.reachable == "yes" else ""
    runs_batched = None if undecided else unbatched is None
    batch_cfg = effective.value("batch_p2p_comm") if "batch_p2p_comm" in needs else UNKNOWN
    v = verdict.site_verdict(r.reachable, runs_batched, batch_cfg)
    if v == "unknown" and r.reachable == "yes" and not undecided:
        undecided = (f"batch_p2p_comm is undecided ({_provenance(effective, 'batch_p2p_comm')})"
                     if "batch_p2p_comm" in needs else
                     "issued on its own (this stack has no batching setting); whether the order of "
                     "such ops hangs is not replayed by scan")
    d.update(
        reachable=r.reachable, guards=r.guards, conditions=r.conditions, paths=r.paths,
        groups=r.groups, verdict=v, reason=r.reason, runs_batched=runs_batched,
        unbatched_reason=unbatched.words if unbatched else "",
        undecided=undecided if v == "unknown" else "", decided_by=r.decided_by,
    )
    return d


def _provenance(effective: EffectiveConfig, key: str) -> str:
    v = effective.get(key)
    return v.provenance if v else f"{key} was never derived"


def _site_findings(site_docs: list[dict[str, Any]], unbatched: dict[str, Unbatched | None],
                   interp: Interpreter) -> list[Finding]:
    findings: list[Finding] = []
    by_cause: dict[Unbatched, list[dict[str, Any]]] = {}
    for d in site_docs:
        why = unbatched[d["id"]]
        if d["verdict"] == "contradiction" and why is not None:
            by_cause.setdefault(why, []).append(d)
    for why, docs in by_cause.items():
        first = docs[0]
        path = " -> ".join(first["paths"][0]) if first["paths"] else first["function"]
        groups = sorted({g for d in docs for g in d["groups"]})
        findings.append(Finding(
            "unbatched-contradiction", "error",
            f"{len(docs)} reachable P2P site(s) will run unbatched although batch_p2p_comm=True "
            f"({why.cause}); e.g. {first['path']}:{first['line']} {first['api']} via {path}, "
            f"group: {', '.join(groups) or 'unknown'}. Under lazy NCCL init each unbatched op "
            "creates a 2-rank communicator for its pair, and ranks that reach different "
            "communicator creations first wait on each other forever (no timeout covers it).",
            fix=why.fix,
            site_ids=[d["id"] for d in docs],
            where=f"{first['path']}:{first['line']}",
        ))
    groups_by_site = {d["id"]: set(d["groups"]) - {"unknown"} for d in site_docs
                      if d["reachable"] == "yes" and d["paths"]}
    distinct = sorted(set().union(*groups_by_site.values())) if groups_by_site else []
    if len(distinct) > 1:
        users = {g: sorted(sid for sid, gs in groups_by_site.items() if g in gs) for g in distinct}
        on_paths = {name for d in site_docs if d["id"] in groups_by_site for path in d["paths"] for name in path}
        patches = [p for p in interp.patches if p.short in on_paths]
        findings.append(Finding(
            "split-communicators", "warning",
            "pipeline neighbours talk over more than one process group: "
            + "; ".join(f"{g}: {len(ids)} site(s)" for g, ids in users.items())
            + ". Each group has its own NCCL communicator, created lazily at its first use, so "
            "the same pair of ranks depends on two rendezvous"
            + (f" (installed by {', '.join(sorted({p.replacement for p in patches}))})" if patches else ""),
            fix="make every pipeline op use one group (e.g. drop the patch that overrides the "
                "group), or initialise eagerly with init_process_group(device_id=...)",
            site_ids=sorted({sid for ids in users.values() for sid in ids}),
            detail={"groups": users},
        ))
    return findings
