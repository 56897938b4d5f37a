"""How a launch script is spelled: the launchers that start training, the programs that wrap
them (srun, env, nohup, ...) and Megatron-LM's flag spellings, indexed for auditor/config/launch.py.

Launchers, scripts and wrappers are read from every rules file, so that a framework's file can add
its own launcher; flags are Megatron-LM's (rules/megatron-lm.toml), filtered to the megatron-core
release that ships its argument parser.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.rulebook import files
from auditor.rulebook.frameworks import frameworks

FLAGS = "megatron-lm"  # the rules file of the `--flag-name` spellings (style "megatron-lm")


@dataclass(frozen=True)
class Spelling:
    version: str | None  # the megatron-core release the flags were selected for
    latest: str | None
    flags: dict[str, dict]
    no_flags: dict[str, dict]
    launchers: tuple[dict, ...]
    swift_scripts: tuple[dict, ...]
    wrappers: frozenset[str]
    shells: frozenset[str]
    batch: frozenset[str]  # programs that run a script given on stdin or by --wrap (sbatch)
    env_names: frozenset[str]  # environment variables some rule reads ([[env_var]], `env.NAME`)
    separated: frozenset[str]  # programs whose command follows `--` (ray job submit ... -- CMD)
    python_runners: tuple[tuple[str, ...], ...]  # words that stand for `python` (coverage run)
    backends: tuple[dict, ...]  # non-NCCL backends and the signs of a run on one ([[backend]])
    front_ends: tuple[dict, ...]  # front ends whose flags put the run on another stack ([[front_end]])
    runners: tuple[dict, ...] = ()  # `uv run [options] COMMAND` ([[command_runner]])
    operand_required: frozenset[str] = frozenset()  # programs that fail given no operand ([wrappers])
    environment_set: tuple[str, ...] = ()  # variables a job's environment sets (fnmatch; [wrappers])
    batch_flags: frozenset[str] = frozenset()  # sbatch's options that take no value ([wrappers])
    cwd_options: frozenset[str] = frozenset()  # wrapper options that move the command ([wrappers])
    no_training: frozenset[str] = frozenset()  # programs that start no training ([wrappers])
    # their options that run another program (`find -exec`), by program ([wrappers])
    program_options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the words that end the command such an option starts (find's `;`, `+`; [wrappers] command_ends)
    command_ends: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # programs that fetch a file named by its URL (wget, curl; [wrappers] fetchers): an entry of that
    # name is a file fetched at run time, not read here
    fetchers: dict[str, dict] = field(default_factory=dict)
    copiers: frozenset[str] = frozenset()  # programs writing their input to each file operand (tee)
    # programs extracting an archive read on their input into a folder (tar; [wrappers] extractors)
    extractors: dict[str, dict] = field(default_factory=dict)
    # programs whose unquoted word not known statically may be an option that runs a command ([wrappers])
    option_words: frozenset[str] = frozenset()
    # programs whose first operand is a command string that runs (`trap CMD SIGNAL`; [wrappers])
    command_operand: frozenset[str] = frozenset()
    # text in a program's arguments with which it runs a command (awk's `system(`; [wrappers])
    command_text: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # options whose value is a command line the program starts (rsync -e; [wrappers]), and the
    # remote shells that run only the command their caller gives them (ssh)
    command_options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    remote_shells: frozenset[str] = frozenset()
    # programs with GNU sed's script language, whose `e` runs a command (auditor.bash.sed_script; [wrappers])
    sed_scripts: frozenset[str] = frozenset()
    # wrappers that add words read from their input to the command, with their options naming
    # where (xargs -I; [wrappers])
    input_words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the options naming the file such a wrapper reads its words from, in place of its input (xargs -a)
    input_files: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the options of such a wrapper that leave its words as read (xargs -r, -t), and those that
    # give how many words one command gets (xargs -n): more than that, it runs several commands
    input_plain: dict[str, tuple[str, ...]] = field(default_factory=dict)
    input_batch: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # wrappers with operands of their own before the command they run, how many (flock FILE; [wrappers])
    wrapper_operands: dict[str, int] = field(default_factory=dict)
    # standard-library modules `python -m` runs that run no code of the run's, with their options
    # that do (`http.server --cgi`; [wrappers])
    inert_python_modules: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # how a program's words split into options and operands, by program (auditor.bash.getopt
    # Grammar's fields; [wrappers] option_grammar)
    option_grammar: dict[str, dict] = field(default_factory=dict)
    # programs whose operands are targets or `NAME=value` overrides of their recipes (make; [wrappers])
    operand_variables: frozenset[str] = frozenset()
    # subcommands of a program that start no training where others may (`ray stop`; [wrappers])
    no_training_subcommands: dict[str, frozenset[str]] = field(default_factory=dict)
    checkout_copies: tuple[dict, ...] = ()  # tools printing a copy of their checkout ([[checkout_copy]])
    # The run's own parser where it was read (auditor.config.frontend_parser.FrontEnd): flags
    # are then its spellings; None: checked against the rules only, never an error.
    front_end: Any = None

    @staticmethod
    @functools.lru_cache(maxsize=8)
    def load(version: str | None) -> Spelling:
        flags = files.load(FLAGS, version)
        same = flags.section("framework").get("distribution")
        every = [files.load(f.name, version if f.distribution == same else None) for f in frameworks()]
        return Spelling(
            version=version,
            latest=flags.section("framework").get("latest_read"),
            flags={e["spelling"]: e for e in flags.table("flag")},
            no_flags={s: e for e in flags.table("no_flag") for s in e["spellings"]},
            launchers=tuple(e for rs in every for e in rs.table("launcher")),
            swift_scripts=tuple(e for rs in every for e in rs.table("swift_script")),
            wrappers=frozenset(p for rs in every for p in rs.section("wrappers").get("programs", ())),
            shells=frozenset(p for rs in every for p in rs.section("wrappers").get("shells", ())),
            batch=frozenset(p for rs in every for p in rs.section("wrappers").get("batch", ())),
            env_names=frozenset(_env_names(every)),
            separated=frozenset(p for rs in every for p in rs.section("wrappers").get("separated", ())),
            backends=tuple(e for rs in every for e in rs.table("backend")),
            front_ends=tuple(e for rs in every for e in rs.table("front_end")),
            runners=tuple(e for rs in every for e in rs.table("command_runner")),
            operand_required=frozenset(p for rs in every for p in rs.section("wrappers").get("operand_required", ())),
            environment_set=tuple(p for rs in every for p in rs.section("wrappers").get("environment_set", ())),
            batch_flags=frozenset(p for rs in every for p in rs.section("wrappers").get("batch_flags", ())),
            cwd_options=frozenset(p for rs in every for p in rs.section("wrappers").get("cwd_options", ())),
            no_training=frozenset(p for rs in every for p in rs.section("wrappers").get("no_training", ())),
            program_options={k: tuple(v) for rs in every
                             for k, v in rs.section("wrappers").get("program_options", {}).items()},
            command_ends={k: tuple(v) for rs in every for k, v in rs.section("wrappers").get("command_ends", {}).items()},
            fetchers={k: dict(v) for rs in every for k, v in rs.section("wrappers").get("fetchers", {}).items()},
            copiers=frozenset(p for rs in every for p in rs.section("wrappers").get("copiers", ())),
            extractors={k: dict(v) for rs in every for k, v in rs.section("wrappers").get("extractors", {}).items()},
            option_words=frozenset(p for rs in every for p in rs.section("wrappers").get("option_words", ())),
            command_operand=frozenset(p for rs in every for p in rs.section("wrappers").get("command_operand", ())),
            command_text={k: tuple(v) for rs in every for k, v in rs.section("wrappers").get("command_text", {}).items()},
            operand_variables=frozenset(p for rs in every for p in rs.section("wrappers").get("operand_variables", ())),
            command_options={k: tuple(v) for rs in every for k, v in rs.section("wrappers").get("command_options", {}).items()},
            remote_shells=frozenset(p for rs in every for p in rs.section("wrappers").get("remote_shells", ())),
            sed_scripts=frozenset(p for rs in every for p in rs.section("wrappers").get("sed_scripts", ())),
            input_words={k: tuple(v) for rs in every for k, v in rs.section("wrappers").get("input_words", {}).items()},
            input_files={k: tuple(v) for rs in every for k, v in rs.section("wrappers").get("input_files", {}).items()},
            input_plain={k: tuple(v) for rs in every for k, v in rs.section("wrappers").get("input_plain", {}).items()},
            input_batch={k: tuple(v) for rs in every for k, v in rs.section("wrappers").get("input_batch", {}).items()},
            wrapper_operands={k: int(v) for rs in every for k, v in rs.section("wrappers").get("operands", {}).items()},
            inert_python_modules={k: tuple(v) for rs in every
                                  for k, v in rs.section("wrappers").get("inert_python_modules", {}).items()},
            option_grammar={k: dict(v) for rs in every for k, v in rs.section("wrappers").get("option_grammar", {}).items()},
            no_training_subcommands={k: frozenset(v) for rs in every
                                     for k, v in rs.section("wrappers").get("no_training_subcommands", {}).items()},
            checkout_copies=tuple(e for rs in every for e in rs.table("checkout_copy")),
            python_runners=tuple(tuple(r.split()) for rs in every
                                 for r in rs.section("wrappers").get("python_runners", ())),
        )

    def outdated(self, entry: dict) -> bool:
        """A spelling current releases no longer accept (checked against the newest tag read)."""
        return bool(self.latest) and files.version_in(self.latest, entry.get("versions", "*")) is False

    def looked_for(self) -> str:
        names = []
        for launcher in self.launchers:
            if launcher.get("trains") is False:  # a tool run as a program (a checkpoint conversion)
                continue
            if launcher.get("subcommands"):  # a program with none trains nothing (a conversion wrapper)
                names.append(f"`{launcher['program']} {'|'.join(launcher['subcommands'])}`")
            python = f" {launcher['interpreters'][0]}" if launcher.get("interpreters") else ""
            names += [f"`{p}{python} SCRIPT`" for p in launcher.get("programs", ())]
            names += [f"`python -m {m} SCRIPT`" for m in launcher.get("python_modules", ())]
            names += [f"`python {p}`" for p in launcher.get("python_scripts", ())]
        return ", ".join(names)


_ENV_REFERENCE = re.compile(r"\benv\.([A-Z_][A-Z0-9_]*)")


def _env_names(every: list) -> set[str]:
    """The variables the rules read: each [[env_var]] and each `env.NAME` in a condition or text."""
    return {e["name"] for rs in every for e in rs.table("env_var")} | _referenced(files.rules_dir())


@functools.cache
def _referenced(rules: Path) -> frozenset[str]:
    """Every `env.NAME` in the rules texts: the same for every release, so read once per rules
    directory (not again on each release's first Spelling)."""
    return frozenset(name for path in sorted(rules.glob("*.toml"))
                     for name in _ENV_REFERENCE.findall(path.read_text(encoding="utf-8")))
