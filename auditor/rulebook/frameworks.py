"""The frameworks the rules know, read from each rules file's `[framework]` table.

Every list of frameworks derives from these tables, so supporting a framework is adding its
rules file. Keys of `[framework]`:
  name          the file's name (`rules/<name>.toml`)
  distribution  the PyPI distribution whose release selects the file's entries; absent for a file
                of facts that no release selects (models, nccl)
  position      where it sits in a training stack, outermost first; lists follow this order
  launchers     fnmatch patterns over the launch command as read (`megatron sft`,
                `torchrun pretrain_gpt.py`) of the runs this framework is the front end of
  runs_on       the framework its runs go on into (ms-swift -> mcore-bridge -> megatron-core)
  packages      the import packages of its code, which `record --coverage` measures by default
  needs         the settings of its own the rules read for its runs (megatron-core:
                batch_p2p_comm, pipeline_model_parallel_size); a stack that needs none has no
                batching setting, so scan cannot decide its sites' order (analysis/verdict.py),
                and a check reading another stack's setting is not judged by it (`foreign_settings`)
  simulated     true where `p2paudit simulate` runs this framework's schedule (torchtitan: torch's
                pipelining schedule): for a stack with no batching setting, simulate is then
                the step that decides its sites' order (analysis/verdict.py), not only a record
  comm_wrappers the modules through which its code hands ops to torch (`deepspeed/comm/*`,
                `PATH:QUALNAME` for one function of a module): an op's `chosen` frame is the first
                frame outside them (auditor/dynamic/callsite.py)
  read, verified, latest_read  the release whose line numbers the entries cite, the releases
                checked against them, the newest release read (rules/megatron-lm.toml)
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from auditor.errors import InputError
from auditor.rulebook import files


@dataclass(frozen=True)
class Framework:
    name: str
    distribution: str | None
    position: int | None
    launchers: tuple[str, ...]
    runs_on: str | None
    packages: tuple[str, ...]
    read: str
    verified: tuple[str, ...]
    latest_read: str | None
    needs: tuple[str, ...] = ()
    comm_wrappers: tuple[str, ...] = ()
    simulated: bool = False

    def fronts(self, launcher: str) -> bool:
        """This framework's front end reads a run started as `launcher`."""
        return launched_by(launcher, self.launchers)


def launched_by(launcher: str, patterns: Iterable[str]) -> bool:
    """`launcher` (the launch command as read) matches one of a rules file's `launchers`
    patterns: the one matcher of `[framework]`, `[[stage]]` and `[[entry_point]]` launchers.
    fnmatch, case-sensitive as the command line is (`Megatron sft` is not `megatron sft`)."""
    return any(fnmatch.fnmatchcase(launcher, p) for p in patterns)


def frameworks(directory: Path | None = None) -> list[Framework]:
    """Every rules file's framework, in stack order (outermost first; files of facts last)."""
    return list(_frameworks(directory or files.rules_dir()))


@functools.lru_cache(maxsize=8)
def _frameworks(directory: Path) -> tuple[Framework, ...]:
    out = []
    for name in files.names(directory):
        meta = files.load(name, None, directory).section("framework")
        out.append(Framework(
            name=name,
            distribution=meta.get("distribution"),
            position=meta.get("position"),
            launchers=tuple(meta.get("launchers", ())),
            runs_on=meta.get("runs_on"),
            packages=tuple(meta.get("packages", ())),
            read=str(meta.get("read", "")),
            verified=tuple(str(v) for v in meta.get("verified", ())),
            latest_read=meta.get("latest_read"),
            needs=tuple(meta.get("needs", ())),
            comm_wrappers=tuple(meta.get("comm_wrappers", ())),
            simulated=bool(meta.get("simulated", False)),
        ))
    return tuple(sorted(out, key=lambda f: (f.position is None, f.position or 0, f.name)))


def pin_option(name: str, directory: Path | None = None) -> str:
    """The option that gives the release of the framework of rules file `name`: --torch for
    torch (the cluster's, not a source to read), --target DISTRIBUTION==VERSION otherwise
    (megatron-lm's rules select on megatron-core's release)."""
    if name == "torch":
        return "--torch X.Y.Z"
    fw = next((f for f in frameworks(directory) if f.name == name), None)
    return f"--target {(fw.distribution if fw else None) or name}==VERSION"


def owner_of(rule_id: str, directory: Path | None = None) -> Framework | None:
    """The framework whose rules file holds the entry `rule_id`: what a verdict about the rule
    tells the user to pin (its distribution), whatever the id's prefix (`swift.`, `mcore.`)."""
    found = _entry(rule_id, directory)
    return found[0] if found else None


def kind_of(rule_id: str, directory: Path | None = None) -> str | None:
    """The `kind` of the entry `rule_id` (a [[check]]'s finding kind), in any release."""
    found = _entry(rule_id, directory)
    return found[1].get("kind") if found else None


def severity_of(rule_id: str, directory: Path | None = None) -> str | None:
    """The `severity` of the entry `rule_id` (a [[check]]'s finding severity), in any release."""
    found = _entry(rule_id, directory)
    return found[1].get("severity") if found else None


def _entry(rule_id: str, directory: Path | None) -> tuple[Framework, dict] | None:
    for fw in frameworks(directory):
        data = files.load(fw.name, None, directory).data
        for table in data.values():
            for e in table if isinstance(table, list) else ():
                if isinstance(e, dict) and e.get("id") == rule_id:
                    return fw, e
    return None


def versioned(directory: Path | None = None) -> list[Framework]:
    """The frameworks whose entries a release selects: those with rules for the pipeline."""
    return [f for f in frameworks(directory) if f.distribution]


@dataclass(frozen=True)
class Stack:
    """The frameworks that run a launch, derived once from its launcher (`Stack.of`) and handed
    to whatever needs them: `launch.stack` (config/model.py). Where no rules file, or more than
    one, claims the launcher, `names` is None and `foreign_settings` empty (which frameworks run
    is unknown), and asking for the rest is a rules error (`chain`)."""

    launcher: str
    claimants: tuple[Framework, ...]  # the frameworks whose `launchers` claim it (`_claimants`)
    frameworks: tuple[Framework, ...]  # the claimant, then those it `runs_on`; () unless one claims
    foreign_settings: dict[str, list[str]]  # setting -> the off-stack frameworks that `need` it

    @staticmethod
    def of(launcher: str, directory: Path | None = None) -> Stack:
        claimants = _claimants(launcher, directory)
        chain = _chain(claimants[0], directory) if len(claimants) == 1 else []
        own = {k for f in chain for k in f.needs}
        foreign: dict[str, list[str]] = {}
        for f in frameworks(directory) if len(claimants) == 1 else ():
            for key in f.needs:
                if key not in own:
                    foreign.setdefault(key, []).append(f.name)
        return Stack(launcher, tuple(claimants), tuple(chain), foreign)

    @property
    def names(self) -> set[str] | None:
        """The rules files of the stack; None where no single file claims the launcher."""
        return {f.name for f in self.frameworks} if len(self.claimants) == 1 else None

    @property
    def chain(self) -> tuple[Framework, ...]:
        """The stack's frameworks, outermost first. No claimant, or two, is a rules error."""
        if len(self.claimants) != 1:
            whose = ", ".join(f.name for f in self.claimants) or "no rules file"
            raise InputError(self.launcher, f"which frameworks does this launcher run? [framework] "
                                            f"launchers of {whose} claim it; exactly one must")
        return self.frameworks

    @property
    def distributions(self) -> list[str]:
        """The distributions the run uses, outermost first."""
        return list(dict.fromkeys(f.distribution for f in self.chain if f.distribution))

    @property
    def needs(self) -> list[str]:
        """The settings the batching rule reads for this run (`[framework] needs` along the
        stack); empty for a stack with no batching setting."""
        return list(dict.fromkeys(k for f in self.chain for k in f.needs))

    @property
    def simulated(self) -> bool:
        """Whether `p2paudit simulate` runs this run's schedule."""
        return any(f.simulated for f in self.chain)

    @property
    def covered_releases(self) -> dict[str, list[str]]:
        """distribution -> the releases every rules file of the stack that selects on it
        verifies (`verified`): megatron-lm's front end and megatron-core's schedules both select
        on megatron-core, so a torchrun run is covered on the releases both verify (0.17.0 on)."""
        out: dict[str, list[str]] = {}
        for f in self.chain:
            if f.distribution and f.verified:
                have = out.get(f.distribution)
                out[f.distribution] = [v for v in f.verified if have is None or v in have]
        return out


def _claimants(launcher: str, directory: Path | None) -> list[Framework]:
    """The frameworks whose `launchers` match; a file that names the launch command exactly
    (`torchrun torchtitan.train`) outranks one that matches it by a wildcard (`torchrun*`), and
    among wildcards the pattern naming more of the command (`python run_*.py` of NeMo-RL over
    `python *` of a plain one-process run)."""
    matching = [f for f in frameworks(directory) if f.fronts(launcher)]
    exact = [f for f in matching if launcher in f.launchers]
    if exact or len(matching) < 2:
        return exact or matching
    named = {f.name: max(len(re.sub(r"[*?]|\[[^]]*]", "", p)) for p in f.launchers
                         if fnmatch.fnmatchcase(launcher, p)) for f in matching}
    most = max(named.values())
    return [f for f in matching if named[f.name] == most]


def _chain(claimant: Framework, directory: Path | None) -> list[Framework]:
    """The framework that claims a launcher, then those it `runs_on`."""
    known = {f.name: f for f in frameworks(directory)}
    chain: list[Framework] = []
    framework: Framework | None = claimant
    while framework is not None and framework not in chain:
        chain.append(framework)
        if framework.runs_on and framework.runs_on not in known:
            raise InputError(f"rules/{framework.name}.toml", f"runs_on names {framework.runs_on!r}, "
                                                             "which has no rules file")
        framework = known.get(framework.runs_on or "")
    return chain


# How an undecided check names a setting `Stack.foreign_settings` gives (analysis/verdict.py reads it).
NOT_THIS_STACK = "a setting this run's stack does not have"


def audited_packages(directory: Path | None = None) -> list[str]:
    """The import packages of every framework's own code, in stack order."""
    return list(dict.fromkeys(p for f in frameworks(directory) for p in f.packages))


def modeled_packages() -> list[str]:
    """The import packages (or modules) of every stack the rules model: each rules file's
    [framework] `packages`, the modules of its [pipeline_model] (torch.distributed.pipelining)
    and those of rules/stacks.toml [[own_pipeline]]. The one place that lists them."""
    out = list(audited_packages())
    for framework in frameworks():
        out += files.load(framework.name).data.get("pipeline_model", {}).get("modules", [])
    out += [m for stack in files.load("stacks").data.get("own_pipeline", []) for m in stack["modules"]]
    return list(dict.fromkeys(out))
