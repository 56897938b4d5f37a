"""What a run's verdict leaves undecided, and the one step that decides each (`--set KEY=VALUE`,
`--target NAME==VERSION`, `p2paudit simulate`): `verdict.judge` lists them, never a derived value
or a flag the script already has.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from auditor.analysis.backend import OP_BY_OP_POSTED, PIPELINE_BACKEND, other_backend
from auditor.analysis.sitestatus import SiteStatus
from auditor.config.envread import env_key
from auditor.config.runconfig import RunConfig
from auditor.rulebook.frameworks import NOT_THIS_STACK, Stack, kind_of, owner_of, pin_option, severity_of

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

# Config keys the contradiction rule and the schedule choice read: unknown, nothing is decided.
NEEDED_KEYS = {
    "pipeline_model_parallel_size": "--set pipeline_model_parallel_size=N, or the flag in the script",
    "batch_p2p_comm": "--target NAME==VERSION for a release the rules cover, or --set batch_p2p_comm=true|false",
}


# How a simulated stack's undecided order names its decider (`_decide_for`, the headline).
SIMULATE = "`p2paudit simulate "


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


def undecided_inputs(doc: dict[str, Any]) -> list[Undecided]:
    """What the contradiction rule needed for this run and the analysis did not decide."""
    # A recorded run's evidence gaps (analysis.runevidence): ranks that left none come first.
    out = [Undecided(u["what"], u["decide"]) for u in (doc.get("run") or {}).get("undecided", [])]
    # A launch finding that leaves the run undecided says what and how to decide it
    # (config.launch `launch.front-end-unread`); one about whether the run starts says so ("aside":
    # "startup", config.entry_imports).
    out += [Undecided(f["detail"]["undecided"], f["detail"]["decide"], f["detail"].get("aside", ""))
            for f in doc.get("findings", []) if "undecided" in (f.get("detail") or {})]
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
        # A variable of the job's environment (env.NAME: never derived from the torch release)
        # decides a torch check on every release; where the releases then disagree, that is its
        # own undecided line (config.across_torch), which names --torch.
        env_keys = [k.strip() for k in unknown_keys.split(",")] if unknown_keys else []
        if torch_rule and not torch_known and env_keys and all(env_key(k) for k in env_keys):
            decide = " ".join(f"--set {k}=VALUE" for k in env_keys)
        elif torch_rule and not torch_known:
            decide = "--torch X.Y.Z (the cluster's torch release)"
        elif set(env_keys) == {"nproc_per_node", "nnodes"} and _one_world(run):
            decide = "--set world_size=N"
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
    backend = other_backend(doc)
    for why, group in by_reason.items():
        first = group[0]
        out.append(Undecided(
            f"{len(group)} reached site(s), e.g. {first['path']}:{first['line']} {first['api']} "
            f"in {first['function']}: {why}", _decide_for(group, run, backend, doc.get("launch"))))
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
    if group[0].get("decide"):  # the entry's own P2P (analysis.own_sites): no setting decides it
        return str(group[0]["decide"])
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
    keys += [t for t in tests if t.isidentifier() and run.value(t) is not None]  # a setting by name
    if tests and len(keys) == len(tests):
        roots = dict.fromkeys(r for k in keys for r in _given_from(k, run, frozenset()))
        derived = [k for k in dict.fromkeys(keys) if k not in roots]
        said = next((m.group(1) for k in roots for m in [re.search(r"; read it from (.+)$", run.provenance(k))]
                     if m), "")
        notes = ([f"what {', '.join(derived)} derive{'s' if len(derived) == 1 else ''} from"] if derived else []) \
            + ([f"read them from {said}"] if said else [])
        return " ".join(f"--set {k}=VALUE" for k in roots) + (f" ({'; '.join(notes)})" if notes else "")
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


def _given_from(key: str, run: RunConfig, seen: frozenset[str]) -> list[str]:
    """The settings a user gives for `key` (#22): an unknown value the rules derived, by the
    unknown inputs it rests on, in turn (mtp_standalone: the pipeline layout); else `key`."""
    inputs = [k for k in run.unknown_inputs(key) if k not in seen]
    return [r for k in inputs for r in _given_from(k, run, seen | {key})] if inputs else [key]


def undecided_words(undecided: list[Undecided]) -> str:
    first = undecided[0]
    more = f" (+{len(undecided) - 1} more, listed below)" if len(undecided) > 1 else ""
    return f"{first.what}; decide it with {first.decide}{more}"


def _one_world(run: RunConfig) -> bool:
    """Whether processes per node and nodes are one unknown, the world (`$WORLD_SIZE` for both, as
    config.launcher `_env_world` reads a world srun or mpirun leaves as the script set it): its
    header names `--set world_size=N`, which pins both, and so does this line."""
    said = [run.provenance(k).partition(": ")[2] for k in ("nproc_per_node", "nnodes")]
    return bool(said[0]) and said[0] == said[1]
