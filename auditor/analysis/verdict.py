"""The one place that decides verdicts: each site's, and the run's.

A site is `contradiction` (reachable, runs unbatched, while the config says batched), `ok`
(also one reached only under an undecided guard that would be ok if reached: analysis.batching),
`unreachable`, or `unknown` (its reachability, or whether it runs batched, was not decided).
The run is `findings` (a contradiction or an ERROR finding), `inconclusive` (nothing wrong was
found, but something the contradiction rule needs was not decided), `clean` (the analysis
covered what it needed and found nothing) or `not-covered` (it runs on a backend the torch rules
do not read, e.g. Ascend's HCCL: what the audit covers for it is said, never clean). Every command's exit code and every format's
headline come from `judge`, so text, HTML, JSON and the exit status cannot disagree.

Fail closed: "clean" is said only when nothing the rule needs is unknown; every undecided input
is listed with what would decide it.

The verdicts of a replayed op order (`simulate`, `repro --predict`) are decided in
`replayverdict`, from the same `RunVerdict` and `Undecided`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.analysis import causes as causes_of
from auditor.analysis import commandcases, settingcases
from auditor.analysis.backend import OP_BY_OP_POSTED, PIPELINE_BACKEND, op_by_op_words, other_backend
from auditor.analysis.runfindings import CYCLE_STOPPED
from auditor.analysis.sitestatus import SiteStatus
from auditor.analysis.undecided import (
    SIMULATE,
    Undecided,
    undecided_inputs,
    undecided_words,
)
from auditor.config import torch_version
from auditor.config.flags import REJECTED_FLAG
from auditor.config.launch_options import check as launcher_check
from auditor.config.model import LaunchConfig
from auditor.config.runconfig import RunConfig
from auditor.config.torch_version import span
from auditor.errors import EXIT_FINDINGS, EXIT_OK
from auditor.findings import Finding
from auditor.config.located import shown_at
from auditor.rulebook import files as rulebook_files

SITE_VERDICTS = ("contradiction", "ok", "unknown", "unreachable")
RUN_VERDICTS = ("findings", "inconclusive", "clean", "inventory", "not-pipeline", "not-covered")
# What the auditor covers, said where a run has none of it (a decided answer, exit 0).
COVERS = ("p2paudit audits the point-to-point traffic of pipeline-parallel training (megatron-core "
          "schedules, torch.distributed.pipelining, DeepSpeed's pipeline engine): this run has none to check")


def site_verdict(reachable: str, runs_batched: bool | None, batch_p2p_comm: Any,
                 backend: Any = None, alone: bool = False) -> str:
    """`runs_batched` None: whether this op runs inside a coalesced group is undecided.
    `backend`: the pipeline group's backend (PIPELINE_BACKEND); `alone`: the op is issued on its own, not in a
    batch that runs op by op (OP_BY_OP_POSTED)."""
    if reachable == "no":
        return "unreachable"
    if reachable != "yes":
        return "unknown"
    if runs_batched is True:
        return "ok"
    if runs_batched is None:
        return "unknown" if batch_p2p_comm is not False else "ok"
    if batch_p2p_comm is True and backend in OP_BY_OP_POSTED:
        return "unknown" if alone else "ok"
    if batch_p2p_comm is True:
        return "contradiction"
    return "ok" if batch_p2p_comm is False else "unknown"


@dataclass
class RunVerdict:
    status: str
    headline: str
    undecided: list[Undecided] = field(default_factory=list)
    contradictions: int = 0
    errors: int = 0
    # Sites the analysis did not reach (no call path found): outside what "clean" speaks for.
    not_analysed: int = 0
    # MUST's two verdicts on the op order, where one was replayed (waitfor.Deadlock.to_json).
    deadlock: dict[str, Any] | None = None
    # Start-up checks not decided: whether the run starts, apart from the P2P verdict.
    startup: list[Undecided] = field(default_factory=list)
    # The findings grouped by cause, gravest first (analysis.causes.Cause.to_json).
    causes: list[dict[str, Any]] = field(default_factory=list)
    # Warning checks not decided: whether a warning shows, apart from the P2P verdict.
    advisory: list[Undecided] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.status in ("clean", "inventory", "not-pipeline") else EXIT_FINDINGS

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "headline": self.headline, "exit_code": self.exit_code,
                "contradictions": self.contradictions, "errors": self.errors,
                "not_analysed": self.not_analysed,
                "undecided": [u.to_json() for u in self.undecided],
                **({"startup_undecided": [u.to_json() for u in self.startup]} if self.startup else {}),
                **({"advisory_undecided": [u.to_json() for u in self.advisory]}
                   if self.advisory else {}),
                **({"deadlock": self.deadlock} if self.deadlock else {}),
                **({"causes": self.causes} if self.causes else {})}


def not_pipeline(what: str) -> RunVerdict:
    """The verdict on a run that trains no pipeline (`swift sft`, `megatron export`): `what` it is."""
    return RunVerdict("not-pipeline", f"NOT A PIPELINE RUN: {what}. {COVERS}.")


def not_covered(what: str, decide: str) -> RunVerdict:
    """The verdict on a run whose pipeline engine no rules model (nanotron's): `what` it is and
    what the audit covers; never clean, `decide` the step that decides it."""
    return RunVerdict("not-covered", f"NOT COVERED: {what}; {decide} decides it.",
                      [Undecided(what, decide)])


def script_exits(what: str) -> RunVerdict:
    """The verdict on a script that surely exits before its training command: it does not start."""
    return RunVerdict("findings", f"DOES NOT START: {what}.", errors=1)


def unpipelined(what: str, launch: LaunchConfig | None, torch: str | None) -> RunVerdict:
    """The verdict on a command that runs no pipeline (`what` it is): DOES NOT START where
    torch's launcher refuses it on every torch judged; else NOT A PIPELINE RUN, saying from which
    torch release on it does not start where only later releases refuse it and the run states none."""
    refused = None if launch is None else launcher_refuses(launch, torch)
    since = None if refused is None or launch is None else _refused_since(launch, torch)
    if refused is not None and since is None:  # torch's launcher stops it first: the sharper answer
        return script_exits(refused)
    # A refusal only from a torch release on, where the run states none: what it is holds on
    # every torch and comes first; the refusal is said after it.
    after = f". On torch {since} it does not start: {refused}" if since else ""
    return not_pipeline(what.rstrip(".") + after)


def launcher_refusals(launch: LaunchConfig, torch: str | None) -> list[Finding]:
    """torch's launcher's refusals of this run on every torch release judged for it, before any
    worker starts (config.launch_options, read from rules/torch.toml): start-up errors."""
    judged = torch_version.resolve(torch, launch).releases
    return [f for f in launcher_check(launch, judged) if f.severity == "error"]


def launcher_refuses(launch: LaunchConfig, torch: str | None) -> str | None:
    """What stops the run before its stack matters, in words: the training script its command
    opens is surely not there (config.script_absent: every rank's python exits 2), a module it
    imports on start-up surely cannot be imported (`launch.import-missing`: whatever its code
    would do, a text-generation entry's NOT A PIPELINE RUN included, it never runs), its entry's
    own parser, read whole, rejects a flag of the command, or torch's launcher refuses it on every torch release judged for this run; None where it starts."""
    if launch.script_absent:
        said = next((d for d in launch.diagnostics if d.message == launch.script_absent), None)
        return launch.script_absent + (f" ({shown_at(said.where)})" if said is not None and said.where else "")
    unimportable = next((d for d in launch.diagnostics if d.kind == "launch.import-missing"), None)
    if unimportable is not None:
        return f"{causes_of.first_sentence(unimportable.message)} ({shown_at(unimportable.where)})"
    # a flag the entry's own parser, read whole, rejects (config.flags.not_in_parser): argparse
    # exits 2 on every rank before the stack runs, whatever that stack would do
    rejected = next((d for d in launch.diagnostics if d.kind == REJECTED_FLAG and d.severity == "error"), None)
    if rejected is not None:
        return f"{causes_of.first_sentence(rejected.message)} ({shown_at(rejected.where)})"
    errors = launcher_refusals(launch, torch)
    if not errors:
        return None
    more = f". {len(errors) - 1} other cause(s): {errors[1].message}" if len(errors) > 1 else ""
    return f"{errors[0].message} ({shown_at(errors[0].where)}){more}"


def _refused_since(launch: LaunchConfig, torch: str | None) -> str | None:
    """The torch release from which on every launcher refusal of `launch` holds (their rules'
    `refused_since`: older launchers start the run), where the run states no torch (no --torch,
    no pin); else None: the refusal is the run's, whichever torch it runs."""
    if torch is not None or any(s.version for s in torch_version.stated(launch)):
        return None
    judged = torch_version.resolve(None, launch).releases
    rules = {e["id"]: e for table in ("launcher_option", "launcher_handoff")
             for e in rulebook_files.load("torch").data.get(table, [])}
    since = {rules.get(f.detail.get("rule"), {}).get("refused_since") for f in launcher_check(launch, judged)
             if f.severity == "error"}
    return None if None in since or len(since) != 1 else f"{since.pop()} and later (every release judged; the run states none)"


def not_followed(what: str, decide: str) -> RunVerdict:
    """The verdict on a valid script whose training command could not be followed."""
    return RunVerdict("inconclusive", f"INCONCLUSIVE: {what}; decide it with {decide}.",
                      [Undecided(what, decide)])


def finish(doc: dict[str, Any]) -> RunVerdict:
    """Judge a finished document and store the verdict in it (`doc["verdict"]`)."""
    verdict = judge(doc)
    doc["verdict"] = verdict.to_json()
    return verdict


def judge(doc: dict[str, Any]) -> RunVerdict:
    sites = doc.get("sites", [])
    scanned = any("reachable" in s for s in sites)
    basis = (doc.get("config") or {}).get("command_basis")
    if not scanned and not doc.get("run") and basis:
        return _decided_unscanned(doc, basis)
    if not scanned and not doc.get("run"):
        return _inventory(doc)
    bad = [s for s in sites if SiteStatus.of(s).contradiction]
    findings = doc.get("findings", [])
    causes = [c.to_json(findings) for c in causes_of.group(findings)]
    errors = [c for c in causes if c["severity"] == "error"]
    every = undecided_inputs(doc)
    undecided = [u for u in every if not u.aside]
    startup = [u for u in every if u.aside == "startup"]
    advisory = [u for u in every if u.aside == "advisory"]
    quiet = [s for s in sites if SiteStatus.of(s).quiet]
    backend = other_backend(doc)
    run = RunConfig.from_json(doc.get("config", {}))
    unscheduled = next((f["message"] for f in findings if f.get("kind") == "entry.no-schedule"), None)
    if unscheduled and not bad and not errors:
        return _no_schedule(doc, not_pipeline(unscheduled))
    if bad or errors:
        status, head = "findings", _findings_headline(doc, bad, errors, findings)
        stops = not bad and all(causes_of.is_startup(f) for f in findings if f.get("severity") == "error")
        if undecided and not stops:  # a run that stops at start-up: what it would do is listed below
            head += f" Also not decided: {undecided_words(undecided)}."
    elif scanned and backend and not undecided and _no_stage_sends(run, sites):
        # At one stage no P2P runs on any backend: the backend's own rules do not matter (where
        # nothing else is undecided: an uncovered torch stays so).
        status = "clean"
        head = (f"CLEAN: 0 reachable P2P site(s): at pipeline_model_parallel_size 1 no stage sends or "
                f"receives, so {backend['short']}, which the rules do not model, has no pipeline P2P to run.")
    elif scanned and backend:
        # The schedule's order was analysed; how this backend runs it is outside the torch rules.
        status = "not-covered"
        reached = sum(1 for s in sites if SiteStatus.of(s).reached)
        what = f"how {backend['short']} runs the pipeline's P2P ops is outside the rules"
        undecided.append(Undecided(what, backend["decide"]))
        said = backend["said"]
        head = (f"NOT COVERED: {said[:1].upper()}{said[1:]}. The schedule reaches {reached} P2P site(s); "
                f"{what}: {backend['decide']} decides it.")
    elif undecided and all(u.decide.startswith(SIMULATE) for u in undecided):
        # A simulated stack (rules `simulated`): scan's part is done, the order is simulate's.
        status = "inconclusive"
        reached = sum(1 for s in sites if SiteStatus.of(s).reached)
        head = (f"INCONCLUSIVE: no contradiction found; the schedule reaches {reached} P2P site(s), each "
                f"with a call path and its op decided; the order of the stage ops is left to "
                f"{undecided[0].decide.split(' (', 1)[0]}, which runs the schedule on CPU and replays "
                f"that order (this stack has no batching setting for scan to judge it by).")
    elif undecided:
        status = "inconclusive"
        head = (f"INCONCLUSIVE: no contradiction found, but not decided: "
                f"{undecided_words(undecided)}.")
    elif scanned:
        status = "clean"
        ok = sum(1 for s in sites if SiteStatus.of(s).ok and not SiteStatus.of(s).reach_unknown)
        maybe = sum(1 for s in sites if SiteStatus.of(s).ok and SiteStatus.of(s).reach_unknown)
        why = _why_unbatched(doc)
        more = f" (and {maybe} under a guard the config leaves undecided, ok if reached)" if maybe else ""
        head = (f"CLEAN: {ok} reachable P2P site(s){more}: {why}." if why.startswith(OP_BY_OP_POSTED)
                else f"CLEAN: {ok} reachable P2P site(s){more}, all run as the config says{why}.")
    else:
        status = "clean"
        head = ("CLEAN: the recorded run shows no error; its sources were inventoried, not "
                "scanned (`p2paudit scan --config` says which sites can fire).")
    differ = releases_differ(doc, status, head)
    if differ is not None:
        status = "inconclusive"
        undecided.insert(0, differ)
        head = f"INCONCLUSIVE: {undecided_words(undecided)}."
    cases = run.setting_basis
    split = settingcases.disagreeing(cases) if cases else None
    if split is not None:
        status = "inconclusive"
        undecided.insert(0, Undecided(*settingcases.differ_words(split)))
        head = f"INCONCLUSIVE: {undecided_words(undecided)}."
    torch = run.torch
    if status in ("clean", "findings") and scanned and torch is not None and torch.version is None \
            and torch.releases:
        head += f" {across_words(list(torch.releases), torch.why_across or 'none stated')}."
    elif status in ("clean", "findings") and scanned and torch is not None and torch.by_range:
        head += f" Torch {torch.version}: {torch.by_range}."  # a release the rules do not list
    release_basis = run.release_basis or {}
    if status in ("clean", "findings") and release_basis.get("free"):
        head += f" {releases_words(release_basis)}."
    if status != "inconclusive" and cases and settingcases.settled(cases):
        head += f" {settingcases.holds_words(cases)}{_whatever_added(doc)}."
    if run.command_basis:
        head += f" {commandcases.words(run.command_basis)}."
    would = [f for f in doc.get("findings", []) if f.get("kind") in ("replay-would-hang",
                                                                      "replay-can-hang")]
    if status == "clean" and would:
        head += f" But: {would[0]['message'].split(': ')[0]}."
    if status != "findings" and quiet:
        unbatched = sum(1 for s in quiet if s.get("runs_batched") is False)
        head += (f" Not analysed: {len(quiet)} site(s) no call path from the entry points reaches"
                 + (f" ({unbatched} of them unbatched)" if unbatched else "")
                 + "; `p2paudit record` of a run, or an --entry that reaches them, decides them.")
    if startup and status != "findings":
        head += f" Start-up: {len(startup)} check(s) not decided, listed below (whether the run starts)."
    if advisory and status != "findings":
        head += f" Warnings: {len(advisory)} check(s) not decided, listed below (whether they warn)."
    # None where a recorder stopped: a cut order's replay speaks of no run (analysis.join)
    deadlock = ((doc.get("run") or {}).get("waitfor") or {}).get("deadlock")
    return RunVerdict(status, head, undecided, len(bad), len(errors), len(quiet), deadlock, startup,
                      causes, advisory)


def _whatever_added(doc: dict[str, Any]) -> str:
    """Where words not known statically may set the settings the cases judged over
    (config.flags.open_settings): the verdict holds whatever they add."""
    words = [v for f in doc.get("findings", []) if f.get("kind") == "launch.unresolved-args"
             for v in (f.get("detail") or {}).get("open", [])]
    return (f"; it holds whatever {', '.join(f'`{w}`' for w in words)} "
            f"{'adds' if len(words) == 1 else 'add'}" if words else "")


def _no_schedule(doc: dict[str, Any], said: RunVerdict) -> RunVerdict:
    """A run whose entry reaches no pipeline schedule (analysis/schedule_reach.py, the finding
    `entry.no-schedule`): NOT A PIPELINE RUN, unless other releases it could run on read otherwise."""
    differ = releases_differ(doc, said.status, said.headline)
    if differ is not None:
        return RunVerdict("inconclusive", f"INCONCLUSIVE: {undecided_words([differ])}.", [differ])
    run = RunConfig.from_json(doc.get("config", {}))
    if run.setting_basis and settingcases.settled(run.setting_basis):  # at a case's value, not the run's
        said.headline += f" {settingcases.holds_words(run.setting_basis)}."
    if run.command_basis:
        said.headline += f" {commandcases.words(run.command_basis)}."
    return said


def _no_stage_sends(run: RunConfig, sites: list[dict[str, Any]]) -> bool:
    """A one-stage run (its pipeline size known to be 1) whose schedule reaches no P2P site."""
    return run.value("pipeline_model_parallel_size") == 1 and not any(SiteStatus.of(s).reached for s in sites)


def _why_unbatched(doc: dict[str, Any]) -> str:
    """Where the config batches nothing, why: then no debug wrapper has a batch to un-batch;
    where the backend runs every batch op by op with no hang of its own, that."""
    run = RunConfig.from_json(doc.get("config", {}))
    backend = run.value(PIPELINE_BACKEND)
    if backend in OP_BY_OP_POSTED and any(s.get("runs_batched") is False and s.get("verdict") == "ok"
                                          for s in doc.get("sites", [])):
        return op_by_op_words(backend)
    if run.value("batch_p2p_comm") is not False or run.value("pipeline_model_parallel_size") in (1, None):
        return ""
    return f", none of them batched ({run.provenance('batch_p2p_comm', 'batch_p2p_comm=False')})"


def across_words(releases: list[str], why: str) -> str:
    """What a verdict judged across torch releases holds on (config.torch_version), and why it
    was judged across them (torch_basis.why_across)."""
    return (f"Holds on every torch the rules cover, {span(releases)} ({why}: --torch "
            "gives the cluster's)")


def _combo_words(releases: dict[str, str]) -> str:
    return " + ".join(f"{name} {version}" for name, version in releases.items())


def releases_words(basis: dict[str, Any]) -> str:
    """What a verdict judged across framework releases holds on (config.release_basis)."""
    combos = basis["combinations"]
    which = "the newest and oldest" if len(combos) > 1 else "the only"
    return (f"Holds on {which} releases the rules cover that fit together, "
            f"{' and '.join(_combo_words(c['releases']) for c in combos)} (none stated: "
            f"--target {basis['free'][0]}==VERSION gives the run's)")


def releases_differ(doc: dict[str, Any], status: str, head: str) -> Undecided | None:
    """Where the combinations of releases a run was judged on (config.release_basis, the first
    being this document's) disagree on the verdict: what differs and the --target deciding it,
    the outermost framework whose release differs between them."""
    combos = (RunConfig.from_json(doc.get("config", {})).release_basis or {}).get("combinations") or []
    if len(combos) < 2 or all(c.get("status") == status for c in combos[1:]):
        return None
    varied = [n for n in combos[0]["releases"] if len({c["releases"].get(n) for c in combos}) > 1]
    said = [f"{_combo_words(combos[0]['releases'])} reads {causes_of.quoted(head)}"]
    said += [f"{_combo_words(c['releases'])} reads {causes_of.quoted(str(c.get('headline', '')))}"
             for c in combos[1:] if c.get("status") != status]
    return Undecided(f"the framework releases the script could run on disagree: {'; '.join(said)}",
                     f"--target {varied[0]}==VERSION (the release the run uses)")


def _findings_headline(doc: dict[str, Any], bad: list[dict[str, Any]],
                       errors: list[dict[str, Any]], findings: list[dict[str, Any]]) -> str:
    """The cause, not the symptom: what the run did (a crash: a process that died of an
    exception, or ended under its peers' connection errors; a hang; a deadlock), led by the
    cause that explains it where one does (a mismatch, the rank that ended first); else the
    first error cause (a start-up failure first: the run never reaches its schedule) with its
    line."""
    more = _more(len(errors))
    symptom = _symptom(doc, findings, len(errors))
    if symptom is not None:
        word, kinds, alone, then = symptom
        # The replay's cycle first where it explains the symptom: what the ranks waited on.
        ranked = sorted(errors, key=lambda c: c["kind"] != "wait-for-cycle")
        cause = next((c for c in ranked if c["kind"] in kinds or kinds & set(c["consequences"])),
                     None)
        if cause is None or cause["kind"] in kinds:  # the symptom is all the run says
            return alone
        said = cause["headline"]
        if said.startswith(CYCLE_STOPPED):  # the stop is said once: how the run stopped, and why
            return f"{word}: {then}, and {said.removeprefix(CYCLE_STOPPED)}{_at(cause)}.{more}"
        return f"{word}: {said}{_at(cause)}; then {then}.{more}"
    if not errors:  # contradictions without a finding: documents written before the findings
        return (f"FINDINGS: {len(bad)} reachable P2P site(s) will run unbatched although "
                f"batch_p2p_comm=True: this run can create lazy 2-rank NCCL communicators and hang.")
    first = errors[0]
    word = "DOES NOT START" if first["startup"] else "FINDINGS"
    return f"{word}: {first['headline']}{_at(first)}.{more}"


def _symptom(doc: dict[str, Any], findings: list[dict[str, Any]], errors: int
             ) -> tuple[str, set[str], str, str] | None:
    """What a recorded run did, where it failed: (its word, the kinds of the findings that say
    it, the headline where nothing explains it, the words that follow a cause that does): a
    crash (a rank that ended first under its peers' errors before the errors themselves), else
    a hang, else a deadlock; None for a run that did neither. `errors`: the error causes."""
    pending = ((doc.get("run") or {}).get("trace") or {}).get("pending")
    crashed = sorted((f for f in findings if causes_of.headline_of(f).startswith("CRASHED: ")),
                     key=lambda f: f["kind"] == "run-crashed")
    cycle = [f for f in findings if f["kind"] == "wait-for-cycle"]
    if crashed:
        said = causes_of.headline_of(crashed[0])
        return "CRASHED", {f["kind"] for f in crashed}, f"{said}.{_more(errors)}", said.removeprefix("CRASHED: ")
    if pending:
        stopped = f"the recorded run stopped with {len(pending)} rank(s) inside an op that never completed"
        return "HANG", {"run-stopped-in-op"}, (
            f"HANG: {stopped}; {errors} error(s) in all, the timeline shows where."), stopped
    if cycle:
        said = causes_of.first_sentence(cycle[0]["message"])
        return "DEADLOCK", {"wait-for-cycle"}, f"DEADLOCK: {said}.", said
    return None


def _more(errors: int) -> str:
    return f" {errors - 1} other cause(s) below." if errors > 1 else ""


def _at(cause: dict[str, Any]) -> str:
    return f" ({shown_at(cause['where'])})" if cause["where"] and ":" in cause["where"] else ""


def gate_verdict(failures: list[Any], known: int, label: str, stops: str = "") -> RunVerdict:
    """A gate run: FAIL on any new problem (a failing gate finding), else PASS, whatever the
    baseline already had (`known` problem sites still there); a start-up error both share
    (`stops`) is said, since neither run reaches its schedule."""
    if failures:
        kinds = sorted({f.kind for f in failures})
        first = failures[0]
        at = f" ({first.where})" if first.where else ""
        return RunVerdict("findings", f"FAIL: {causes_of.first_sentence(first.message)}{at}; "
                                      f"{len(failures)} gate failure(s) in {label} relative to "
                                      f"the baseline ({', '.join(kinds)})", errors=len(failures))
    return RunVerdict("clean", f"PASS: {label} adds no reachable unbatched site and no "
                               f"contradiction, and the scan decided everything it needed "
                               f"({known} problem site(s) known from the baseline are still there)"
                               + (f"; but the run does not start, as in the baseline: {stops}"
                                  if stops else ""))


def gate_not_pipeline(what: str, baseline: dict[str, Any]) -> RunVerdict:
    """A gate whose new scan reads the run as no pipeline run: nothing to compare passes where the
    baseline read it so too or judged no P2P site; a baseline that judged pipeline sites fails,
    since the new reading drops every one of them unexamined (a release change, or a reading
    that went wrong: the gate cannot tell which)."""
    status = (baseline.get("verdict") or {}).get("status", "")
    sites = len(baseline.get("sites", []))
    if status == "not-pipeline" or not sites:
        return not_pipeline(what)
    return RunVerdict("findings", f"FAIL: the baseline judged {sites} P2P site(s) of this script "
                                  f"({status or 'no verdict'}); the new scan reads it as no pipeline "
                                  f"run and judges none: {what.rstrip('.')}. Compare the two readings, "
                                  f"then remake the baseline", errors=1)


def _decided_unscanned(doc: dict[str, Any], basis: dict[str, Any]) -> RunVerdict:
    """A script's document whose worst command was decided before any scan (a command that runs
    no pipeline, which torch's launcher may refuse: `unpipelined`): that command's verdict, as
    the basis keeps it, said over every command."""
    shown = basis["commands"][basis["shown"]]
    findings = doc.get("findings", [])
    causes = [c.to_json(findings) for c in causes_of.group(findings)]
    errors = [c for c in causes if c["severity"] == "error"]
    return RunVerdict(shown["status"], f"{shown['headline']} {commandcases.words(basis)}.",
                      errors=max(len(errors), int(shown["status"] == "findings")), causes=causes)


def _inventory(doc: dict[str, Any]) -> RunVerdict:
    n = len(doc.get("sites", []))
    return RunVerdict("inventory", f"{n} P2P call site(s) (an inventory: run `p2paudit scan "
                               "--config` to know which can fire).")
