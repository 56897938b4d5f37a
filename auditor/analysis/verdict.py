"""The one place that decides verdicts: each site's, and the run's.

A site is `contradiction` (reachable, runs unbatched, while the config says batched), `ok`,
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

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from auditor.analysis import causes as causes_of
from auditor.analysis import commandcases, settingcases
from auditor.analysis.sitestatus import SiteStatus
from auditor.config.envread import env_key
from auditor.config.runconfig import RunConfig
from auditor.config.torch_version import span
from auditor.errors import EXIT_FINDINGS, EXIT_OK
from auditor.rulebook.frameworks import (
    NOT_THIS_STACK,
    Stack,
    kind_of,
    owner_of,
    pin_option,
    severity_of,
)

SITE_VERDICTS = ("contradiction", "ok", "unknown", "unreachable")
RUN_VERDICTS = ("findings", "inconclusive", "clean", "inventory", "not-pipeline", "not-covered")
# What the auditor covers, said where a run has none of it (a decided answer, exit 0).
COVERS = ("p2paudit audits the point-to-point traffic of pipeline-parallel training (megatron-core "
          "schedules, torch.distributed.pipelining, DeepSpeed's pipeline engine): this run has none to check")

# Config keys the contradiction rule and the schedule choice read: unknown, nothing is decided.
NEEDED_KEYS = {
    "pipeline_model_parallel_size": "--set pipeline_model_parallel_size=N, or the flag in the script",
    "batch_p2p_comm": "--target NAME==VERSION for a release the rules cover, or --set batch_p2p_comm=true|false",
}


# How a simulated stack's undecided order names its decider (`_decide_for`, the headline).
SIMULATE = "`p2paudit simulate "

# Backends on which a batch run op by op has no hang of its own: gloo never coalesces
# (supports_coalescing false), so batch_isend_irecv posts each isend/irecv, every one before any
# is waited on, and gloo creates no communicator per pair (NCCL's lazy-init hang has no mechanism):
# measured, megatron-core's schedule at 24 MiB on 4 and 8 gloo processes completes
# (docs/findings.md section 6). A blocking op issued on its own still waits for its receive
# (rules/nccl.toml, transport "gloo"): its order decides, which scan does not replay.
OP_BY_OP_POSTED = ("gloo",)
# The backend the pipeline group runs on (rules/torch.toml torch.pipeline-backend): its own where
# a flag gives one, else the default backend.
PIPELINE_BACKEND = "pipeline_backend"


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


def op_by_op_words(backend: Any) -> str:
    """Why a batch run op by op on `backend` (OP_BY_OP_POSTED) is no contradiction."""
    return (f"{backend} runs every batch op by op, each isend/irecv posted before any is waited "
            f"on, with no communicator per pair: no lazy-init hang (docs/findings.md section 6); "
            f"but {backend} send/recv takes no CUDA tensors (torch's backend table): a GPU run may not get that far")


# Kinds of [[check]] whose failure stops the run at start-up (each entry's `effect`: a
# ValueError in a config's __post_init__, an AssertionError in validate_args, a model that cannot
# be built), before any P2P op. Undecided, they leave open whether the run starts, not which of
# its P2P sites fire or how: listed apart (`RunVerdict.startup`), never making the P2P verdict
# inconclusive. A check of another kind (contradictory-p2p, batch-runs-unbatched) bears on P2P.
STARTUP_KINDS = ("parallel-sizes", "layer-split", "batch-size")
# Severities of a [[check]] that, holding, add a finding but never change the run's verdict (a
# warning beside CLEAN): undecided, they leave open only whether that finding shows, so they are
# listed apart (`RunVerdict.advisory`) and never make the P2P verdict inconclusive.
ADVISORY_SEVERITIES = ("warning", "info")


@dataclass(frozen=True)
class Undecided:
    """Something the contradiction rule needed and did not get, and what would decide it.
    `aside`: what the P2P verdict does not rest on: "startup" (a `STARTUP_KINDS` check: whether
    the run starts), "advisory" (an `ADVISORY_SEVERITIES` check: whether a warning shows)."""

    what: str
    decide: str
    aside: str = ""

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "decide": self.decide}


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
    backend = _other_backend(doc)
    run = RunConfig.from_json(doc.get("config", {}))
    unscheduled = next((f["message"] for f in findings if f.get("kind") == "entry.no-schedule"), None)
    if unscheduled and not bad and not errors:
        return _no_schedule(doc, not_pipeline(unscheduled))
    if bad or errors:
        status, head = "findings", _findings_headline(doc, bad, errors, findings)
        stops = not bad and all(causes_of.is_startup(f) for f in findings if f.get("severity") == "error")
        if undecided and not stops:  # a run that stops at start-up: what it would do is listed below
            head += f" Also not decided: {_undecided_words(undecided)}."
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
                f"{_undecided_words(undecided)}.")
    elif scanned:
        status = "clean"
        ok = sum(1 for s in sites if SiteStatus.of(s).ok)
        why = _why_unbatched(doc)
        head = (f"CLEAN: {ok} reachable P2P site(s): {why}." if why.startswith(OP_BY_OP_POSTED)
                else f"CLEAN: {ok} reachable P2P site(s), all run as the config says{why}.")
    else:
        status = "clean"
        head = ("CLEAN: the recorded run shows no error; its sources were inventoried, not "
                "scanned (`p2paudit scan --config` says which sites can fire).")
    differ = releases_differ(doc, status, head)
    if differ is not None:
        status = "inconclusive"
        undecided.insert(0, differ)
        head = f"INCONCLUSIVE: {_undecided_words(undecided)}."
    cases = run.setting_basis
    split = settingcases.disagreeing(cases) if cases else None
    if split is not None:
        status = "inconclusive"
        undecided.insert(0, Undecided(*settingcases.differ_words(split)))
        head = f"INCONCLUSIVE: {_undecided_words(undecided)}."
    torch = run.torch
    if status in ("clean", "findings") and scanned and torch is not None and torch.version is None \
            and torch.releases:
        head += f" {across_words(list(torch.releases), torch.why_across or 'none stated')}."
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
        return RunVerdict("inconclusive", f"INCONCLUSIVE: {_undecided_words([differ])}.", [differ])
    run = RunConfig.from_json(doc.get("config", {}))
    if run.setting_basis and settingcases.settled(run.setting_basis):  # at a case's value, not the run's
        said.headline += f" {settingcases.holds_words(run.setting_basis)}."
    if run.command_basis:
        said.headline += f" {commandcases.words(run.command_basis)}."
    return said


def _no_stage_sends(run: RunConfig, sites: list[dict[str, Any]]) -> bool:
    """A one-stage run (its pipeline size known to be 1) whose schedule reaches no P2P site."""
    return run.value("pipeline_model_parallel_size") == 1 and not any(SiteStatus.of(s).reached for s in sites)


def _other_backend(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The backend other than NCCL the run is on (config.launch `launch.backend`, Ascend's HCCL),
    with what the script shows of it (`said`); None where the config says another backend
    (`--set distributed_backend=nccl`)."""
    found = next((f for f in doc.get("findings", []) if f.get("kind") == "launch.backend"
                  and "decide" in (f.get("detail") or {})), None)
    run = RunConfig.from_json(doc.get("config", {}))
    if found is None or run.value("distributed_backend") != found["detail"]["backend"]:
        return None
    return {**found["detail"], "said": str(found["message"])}


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


def undecided_inputs(doc: dict[str, Any]) -> list[Undecided]:
    """What the contradiction rule needed for this run and the analysis did not decide."""
    # A recorded run's evidence gaps (analysis.runevidence): ranks that left none come first.
    out = [Undecided(u["what"], u["decide"]) for u in (doc.get("run") or {}).get("undecided", [])]
    # A launch finding that leaves the run undecided says what and how to decide it
    # (config.launch `launch.front-end-unread`).
    out += [Undecided(f["detail"]["undecided"], f["detail"]["decide"]) for f in doc.get("findings", [])
            if "undecided" in (f.get("detail") or {})]
    run = RunConfig.from_json(doc.get("config", {}))
    for release, all_keys in run.outside_rules.items():
        keys = list(dict.fromkeys(k for k in all_keys if run.is_unknown(k)))
        if not keys:
            continue
        framework = release.split(" ")[0]
        out.append(Undecided(
            f"{release} is outside the releases the rules cover ({len(keys)} setting(s) unknown, "
            f"e.g. {', '.join(sorted(keys)[:3])})",
            f"{pin_option(framework)} for a covered release, or add {release} to "
            f"rules/{framework}.toml (tests check it against the real release)"))
    scanned = any("reachable" in s for s in doc.get("sites", []))
    # documents from before `needs`: Megatron's
    needs = list(NEEDED_KEYS) if run.needs is None else run.needs
    for key in NEEDED_KEYS:
        if key == "batch_p2p_comm" and run.value("pipeline_model_parallel_size") == 1:
            continue  # one stage: no pipeline P2P runs, batched or not (a verl run on mbridge)
        if scanned and key in needs and run.is_open(key):
            out.append(Undecided(f"{key} ({run.provenance(key) or 'never derived'})",
                                 _needed_decide(key, run)))
    torch_known = not run.is_open("torch_version")
    checks: dict[tuple[str, str, str], list[str]] = {}  # (why, decide, aside) -> checks
    for why in run.undecided:
        # Each entry starts with its rule's id (config.derive); the rule's file names what to pin.
        owner = owner_of(why.split(":", 1)[0])
        _, unknown_keys = why.partition(": unknown ")[::2]  # a check's `when` (config.derive)
        torch_rule = owner is not None and owner.name == "torch"
        if torch_rule and not torch_known:
            decide = "--torch X.Y.Z (the cluster's torch release)"
        elif unknown_keys and all(_settable(k.strip()) for k in unknown_keys.split(",")):
            decide = " ".join(f"--set {k.strip()}=VALUE" for k in unknown_keys.split(","))
        elif unknown_keys:
            decide = f"--set KEY=VALUE for {unknown_keys}"
        elif NOT_THIS_STACK in why:
            decide = ("`p2paudit record` of a run, then `p2paudit report`; or a rule of this stack's "
                      "rules file that derives the setting")
        else:
            pin = pin_option(owner.name) if owner else "the framework's release"
            decide = f"{pin} for a release the rules cover, or add the release to rules/"
        ident, _, rest = why.partition(": ")
        aside = ("startup" if kind_of(ident) in STARTUP_KINDS else
                 "advisory" if severity_of(ident) in ADVISORY_SEVERITIES else "")
        checks.setdefault((rest, decide, aside), []).append(ident)
    for (rest, decide, aside), idents in checks.items():  # one line per reason, not per check
        named = ", ".join(idents[:3]) + (f" and {len(idents) - 3} more" if len(idents) > 3 else "")
        out.append(Undecided(f"check {idents[0]}: {rest}" if len(idents) == 1 else
                             f"{len(idents)} checks ({named}): {rest}", decide, aside))
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for s in doc.get("sites", []):
        status = SiteStatus.of(s)
        if status.verdict_unknown and (status.on_path or status.undecided):
            by_reason.setdefault(s.get("undecided") or s.get("reason") or "reached under an "
                                 "undecided guard", []).append(s)
    backend = _other_backend(doc)
    for why, group in by_reason.items():
        first = group[0]
        out.append(Undecided(
            f"{len(group)} reached site(s), e.g. {first['path']}:{first['line']} {first['api']} "
            f"in {first['function']}: {why}", _decide_for(group, run, backend, doc.get("launch"))))
    incomplete = ((doc.get("run") or {}).get("trace") or {}).get("incomplete") or {}
    if incomplete:
        at, why = str(next(iter(incomplete.values()))).split(": ", 1)
        out.append(Undecided(
            f"what rank(s) {', '.join(incomplete)} did after their trace ends: the trace is "
            f"incomplete for them ({why}; {at})",
            "`p2paudit record` again with --out on a filesystem with room (df -h), or fix the "
            "recorder error the trace names"))
    analysis = doc.get("analysis", {})
    if analysis.get("budget_exhausted"):
        cuts = analysis.get("budget_cuts") or []
        cut = (f" ({len(cuts)} function(s) left unwalked; first {cuts[0]['function']}, "
               f"{cuts[0]['budget']} = {cuts[0]['limit']})") if cuts else ""
        out.append(Undecided(
            f"what lies behind the call-graph interpreter's budget{cut}: sites there were not "
            "analysed", "--entry MODULE:QUALNAME nearer the pipeline schedule"))
    pp = run.value("pipeline_model_parallel_size")
    reached = [s for s in doc.get("sites", []) if SiteStatus.of(s).reached or SiteStatus.of(s).on_path]
    if isinstance(pp, int) and pp > 1 and not reached:  # given by --set on stacks without it
        out.append(Undecided(
            f"the pipeline schedule: pipeline_model_parallel_size={pp}, but the entry points "
            f"({'; '.join(doc.get('entries') or []) or 'none'}) reach no P2P site (the analysis "
            "lost the schedule)",
            "--entry MODULE:QUALNAME of the training step, or --target the release that has it"))
    return out


def _settable(key: str) -> bool:
    """A key `--set KEY=VALUE` takes: a setting's name, or `env.NAME` of a variable."""
    return (env_key(key) or key).isidentifier()


def _needed_decide(key: str, run: RunConfig) -> str:
    """What decides a needed key: NEEDED_KEYS's step, naming the framework whose unknown release
    left it unknown (the value's source, config.derive) where `--target NAME==VERSION` is asked;
    without such a framework, the `--set` of the key alone."""
    decide = NEEDED_KEYS[key]
    if "NAME==VERSION" not in decide:
        return decide
    source = run.source(key)
    if source != "torch" and run.versions.get(source, "") is None:
        return decide.replace("--target NAME==VERSION", pin_option(source))
    # Every release is known: the rules leave it open for this run; only the value decides it.
    return decide.split(", or ")[-1]


def _decide_for(group: list[dict[str, Any]], run: RunConfig,
                backend: dict[str, Any] | None = None, launch: dict[str, Any] | None = None) -> str:
    """What decides sites that share a reason: the torch release where coalescing is undecided
    (`runs_batched` None), or on another backend than NCCL (`_other_backend`) a run on it; else
    the config tests their reachability rests on; in a stack with no batching setting, a
    recorded run's replay of their order, or simulate where it runs the stack's schedule."""
    launch = launch or {}
    if group[0].get("runs_batched") is None:
        if backend is not None:
            return str(backend["decide"])
        inputs = run.unknown_inputs("torch_batch_coalesces")
        if inputs:  # torch is known, or every release judged: what it reads is not
            return " ".join(f"--set {k}=VALUE" for k in inputs)
        if run.is_open("torch_version"):
            return "--torch X.Y.Z (the cluster's torch release)"
        return "`p2paudit record` of a run, then `p2paudit report` (what ran coalesced)"
    if group[0].get("runs_batched") is False and run.value(PIPELINE_BACKEND) in OP_BY_OP_POSTED:
        return "`p2paudit record` of a run, then `p2paudit report` (its replay decides the order)"
    tests = sorted({t for s in group for t in s.get("decided_by") or []})
    keys = [m.group(1) for t in tests for m in [re.fullmatch(r"(?:\w+\.)*config\.(\w+)", t)] if m]
    if tests and len(keys) == len(tests):
        return " ".join(f"--set {k}=VALUE" for k in dict.fromkeys(keys))
    if tests:
        return f"--set the config value of {', '.join(tests)}"
    if "batch_p2p_comm" not in (list(NEEDED_KEYS) if run.needs is None else run.needs):
        if launch.get("path") and launch.get("launcher") and Stack.of(launch["launcher"]).simulated:
            given = f" --command {shlex.quote(launch['command'])}" if launch.get("command") is not None else ""
            return (f"{SIMULATE}--config {launch['path']}{given}` (runs the schedule on CPU and "
                    "replays its order), or `p2paudit record` of a run")
        return "`p2paudit record` of a run, then `p2paudit report` (its replay decides the order)"
    if run.is_open("batch_p2p_comm"):
        return _needed_decide("batch_p2p_comm", run)
    return "--set KEY=VALUE for the config value the guard reads, or --target a release the rules cover"


def _undecided_words(undecided: list[Undecided]) -> str:
    first = undecided[0]
    more = f" (+{len(undecided) - 1} more, listed below)" if len(undecided) > 1 else ""
    return f"{first.what}; decide it with {first.decide}{more}"


def _findings_headline(doc: dict[str, Any], bad: list[dict[str, Any]],
                       errors: list[dict[str, Any]], findings: list[dict[str, Any]]) -> str:
    """The cause, not the symptom: a crash a run recorded (a process that died of an exception:
    the others waiting on it are its consequence), a hang or deadlock, else the first error
    cause (a start-up failure first: the run never reaches its schedule) with its line."""
    run = doc.get("run") or {}
    pending = (run.get("trace") or {}).get("pending")
    cycle = [f for f in findings if f["kind"] == "wait-for-cycle"]
    crashed = next((f for f in findings if f["kind"] == "run-crashed"), None)
    if crashed is not None:
        more = f" {len(errors) - 1} other cause(s) below." if len(errors) > 1 else ""
        return f"{causes_of.headline_of(crashed)}.{more}"
    if pending:
        return (f"HANG: the recorded run stopped with {len(pending)} rank(s) inside an op that "
                f"never completed; {len(errors)} error(s) in all, the timeline shows where.")
    if cycle:
        return f"DEADLOCK: {causes_of.first_sentence(cycle[0]['message'])}."
    if not errors:  # contradictions without a finding: documents written before the findings
        return (f"FINDINGS: {len(bad)} reachable P2P site(s) will run unbatched although "
                f"batch_p2p_comm=True: this run can create lazy 2-rank NCCL communicators and hang.")
    first = errors[0]
    word = "DOES NOT START" if first["startup"] else "FINDINGS"
    at = f" ({first['where']})" if first["where"] and ":" in first["where"] else ""
    more = f" {len(errors) - 1} other cause(s) below." if len(errors) > 1 else ""
    return f"{word}: {first['headline']}{at}.{more}"


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


def _inventory(doc: dict[str, Any]) -> RunVerdict:
    n = len(doc.get("sites", []))
    return RunVerdict("inventory", f"{n} P2P call site(s) (an inventory: run `p2paudit scan "
                               "--config` to know which can fire).")
