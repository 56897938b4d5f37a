"""The fix pipeline: scan, one remedy option per cause, each option's edits verified alone by a
re-scan, the verified ones merged into one patch, the patch verified again as a whole.

One cause, one fix: the options are those of each cause's root finding (analysis.causes); the
findings it explains are expected to go with it, and are checked to.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from auditor.analysis import causes
from auditor.config.envread import ENV_PREFIX, env_key
from auditor.config.model import LaunchConfig
from auditor.config.pyenv import EntryFile, locate
from auditor.errors import InputError
from auditor.fix import edits as text_edits
from auditor.fix import verify
from auditor.fix.edits import TextEdit
from auditor.fix.remedies import Option, options_for, pick
from auditor.fix.script import ENV_EDITS, NotMechanical, edits_for
from auditor.fix.trainer import Scene
from auditor.fix.verify import STILL, RescanOutcome, compare, rescan
from auditor.scan import ScanInputs, read_config, release_choice, run_scan
from auditor.sources import SourceSet


@dataclass
class Proposal:
    """A cause's chosen option: its edits, or why it has none; and its own re-scan."""

    cause: causes.Cause
    option: Option
    options: list[Option]
    edits: list[TextEdit] = field(default_factory=list)
    not_mechanical: str = ""
    outcome: RescanOutcome | None = None

    @property
    def verified(self) -> bool:
        """Its edits remove the cause's own finding and add none. What the cause explains may
        have a second reason that stays (the report says which)."""
        return (bool(self.edits) and self.outcome is not None
                and self.outcome.removes([self.cause.index]))


@dataclass
class FixPlan:
    path: str  # the launch script
    sources: dict[str, str]  # each file read, as scanned: the launch script, the entry script
    doc: dict[str, Any]
    proposals: list[Proposal]
    edits: list[TextEdit]  # the verified options' edits, merged
    patched: dict[str, str]  # each file the patch changes, patched
    outcome: RescanOutcome | None  # the re-scan of the whole patch
    patched_doc: dict[str, Any] | None
    # `simulate` of the patched script (verify.simulate), or why it was not run
    simulation: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The launch script as scanned."""
        return self.sources[self.path]

    def sha256(self, path: str) -> str:
        """Of the file as scanned: --apply refuses a file that changed since."""
        return sha256(self.sources[path])

    @property
    def verified(self) -> bool:
        """The patch as a whole removes every finding its options target, adds none."""
        taken = [p.cause.index for p in self.proposals if p.verified]
        return bool(self.edits) and self.outcome is not None and self.outcome.removes(taken)

    @property
    def exit_code(self) -> int:
        """0 when no ERROR is left: the verified patch removed every one (or the scan had none
        and there is nothing to patch); else 1. Whether the patched run is CLEAN is the
        re-scan's headline, shown beside it."""
        if self.edits and not self.verified:
            return 1
        if self.simulation.get("simulated") and self.simulation["exit_code"] != 0:
            return 1  # the schedule's order, run, does not complete
        after = self.patched_doc if self.patched_doc is not None else self.doc
        return 1 if any(f["severity"] == "error" for f in after["findings"]) else 0

    def diff(self) -> str:
        """One unified diff of every file the patch changes, the launch script first."""
        return "".join(text_edits.unified(label(path), self.sources[path], text)
                       for path, text in self.patched.items())


def patched_files(sources: dict[str, str], edits: list[TextEdit]) -> dict[str, str]:
    """Each file `edits` change, with them made (in the order of `sources`)."""
    return {path: text_edits.apply(text, [e for e in edits if e.path == path])
            for path, text in sources.items() if any(e.path == path for e in edits)}


def label(path: str) -> str:
    """The script's name in the diff: relative to the working directory when inside it (so
    `git apply` takes it there), else its file name (apply it in its directory)."""
    rel = os.path.relpath(path)
    return os.path.basename(path) if rel.startswith("..") else rel


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


read_text = verify.read_text


def newest_releases(config_path: str, command: str | None) -> list[str] | None:
    """For a script that states not every release of its stack, the targets `fix` patches and
    verifies it on: the newest combination scan judges it on (config.releases), the one whose
    document scan's findings come from; None where it states them all."""
    choice = release_choice(config_path, command)[1]
    return None if choice is None else choice.targets(choice.combinations[0])


@dataclass
class Bench:
    """What a cause's edits are made from: the launch as read, the framework sources, the text
    of each file read (the launch script's, the entry script's where it sets a variable), the
    entry script, and the variables `--set env.` gives."""

    launch: LaunchConfig
    srcs: list[SourceSet]
    sources: dict[str, str]
    entry: EntryFile | None
    given_env: set[str]


def bench(inputs: ScanInputs, read: tuple[LaunchConfig, list[SourceSet]], source: str) -> Bench:
    """The bench of `inputs`, whose launch script (text `source`) `read_config` gave `read`."""
    launch = read[0]
    return Bench(launch, read[1], _read_sources(launch, source), locate(launch)[0],
                 {n for n in map(env_key, inputs.overrides or {}) if n is not None})


def propose(on: Bench, doc: dict[str, Any], cause: causes.Cause,
            chosen: set[str]) -> Proposal | None:
    """The cause's option (`chosen`'s, else the default) with its edits, or why it has none;
    None where its finding has no option. The one place that decides whether a cause has a
    patch: `fix` makes it, `scan` and `gate` point to `fix` only where it has one (fix.pointer)."""
    finding = doc["findings"][cause.index]
    options = options_for(finding)
    option = pick(options, chosen)
    if option is None:
        return None
    proposal = Proposal(cause, option, options)
    given = [s.name for s in option.steps if s.edit in ENV_EDITS and s.name in on.given_env]
    if given:  # its value is the job's environment, which no edit of the script changes
        proposal.not_mechanical = (f"{given[0]} comes from --set {ENV_PREFIX}{given[0]}, the job's "
                                   "environment: change it where the job gets it")
        return proposal
    scene = Scene.of(finding, doc, on.srcs, on.entry.path if on.entry else None)
    try:
        proposal.edits = edits_for(option, on.launch, on.sources, scene)
    except NotMechanical as exc:
        proposal.not_mechanical = str(exc)
    return proposal


def _verify_alone(inputs: ScanInputs, sources: dict[str, str], entry: EntryFile | None,
                  findings: list[dict[str, Any]], proposals: list[Proposal]) -> None:
    """Each proposal's edits alone, re-scanned."""
    for p in proposals:
        if p.edits:
            after = rescan(inputs, patched_files(sources, p.edits), entry)
            p.outcome = compare(findings, after["findings"])


def _read_sources(launch: LaunchConfig, source: str) -> dict[str, str]:
    """The launch script's text and the entry script's, where it sets a variable the scan read."""
    sources = {launch.path: source}
    for path in dict.fromkeys(x.path for v in launch.env.values() for x in (v, *v.others)
                              if x.path):
        sources[path] = read_text(path)
    return sources


def make(inputs: ScanInputs, chosen: set[str] | None = None, simulate: bool | None = None) -> FixPlan:
    """The verified patch for `inputs`' script (and its entry script); `chosen`: option names
    instead of defaults; `simulate`: run `simulate` on the patched script (None: where it
    applies, a megatron-core pipeline)."""
    chosen = chosen or set()
    source = read_text(inputs.config_path)
    read = read_config(inputs.config_path, inputs.targets, inputs.command)
    on = bench(inputs, read, source)
    sources, entry = on.sources, on.entry
    doc = run_scan(inputs, read)
    if read_text(inputs.config_path) != source:  # the edits' offsets are into `source`
        raise InputError(inputs.config_path, "changed while it was scanned: run p2paudit fix again")
    findings = doc["findings"]
    proposals = [p for cause in causes.group(findings)
                 if (p := propose(on, doc, cause, chosen)) is not None]
    _verify_alone(inputs, sources, entry, findings, proposals)
    # A finding its cause explains but whose fix leaves it has a reason of its own: its own
    # remedy, where it has one, joins the patch.
    second = []
    for p in proposals:
        if not p.verified or p.outcome is None:
            continue
        for i in p.cause.consequences:
            if p.outcome.states[i] != STILL:
                continue
            own = propose(on, doc, causes.Cause(i, findings[i]["severity"], (), False), chosen)
            if own is not None:
                second.append(own)
    _verify_alone(inputs, sources, entry, findings, second)
    proposals += second
    verified = [p for p in proposals if p.verified]
    merged, dropped = text_edits.merge([p.edits for p in verified])
    for i in dropped:  # its edit collides with an earlier option's: not part of this patch
        verified[i].outcome = None
    patched = patched_files(sources, merged)
    outcome, patched_doc = None, None
    if merged:
        patched_doc = rescan(inputs, patched, entry)
        outcome = compare(findings, patched_doc["findings"])
        outcome.verdict = patched_doc["verdict"]
    simulation = {"simulated": False, "headline": "not asked (--no-simulate)"}
    if simulate is None and not verify.simulates(doc):
        simulation["headline"] = "not applicable: no megatron-core pipeline schedule to run"
    elif simulate is not False and merged:
        simulation = verify.simulate(inputs, patched, entry)
    return FixPlan(inputs.config_path, sources, doc, proposals, merged, patched, outcome,
                patched_doc, simulation)
