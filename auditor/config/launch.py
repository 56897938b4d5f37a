"""Reads a bash launch script into a LaunchConfig without running anything.

The script is read as bash reads it (auditor.bash); its walk picks out the training command
among the commands it runs (auditor.config.training_command). This module assembles what that
command gets: its flags (auditor.config.flags), the launcher's options and world size
(auditor.config.launcher), its environment, and the `name==X` version pins of the comments.

Which commands train, how launchers size the world and how Megatron-LM spells its flags is
framework knowledge kept in rules/megatron-lm.toml. Only unreadable input raises InputError
(bad bytes, an unterminated quote, a script bash rejects); a valid script whose training command
cannot be followed raises CommandNotFollowed (an undecided run); everything else is a diagnostic.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from auditor.bash.lexer import Lexer
from auditor.bash.parser import ShellParser, simple_commands
from auditor.bash.syntax import bash_rejects
from auditor.bash.values import EnvVar, Scalar, Symbolic
from auditor.bash.walk import Exit
from auditor.config.checkout_release import judge_on_framework_checkout
from auditor.config.fetch_target import ANY, UNKNOWN
from auditor.config.frontend_parser import find_script
from auditor.config.frontends import for_style
from auditor.config.frontends.hydra_strategy import unverified_release
from auditor.config.frontends.megatron_lm import judge_on_checkout
from auditor.config.entry_copy import entry_name
from auditor.config.launcher import torchrun_options, world_size, world_variables
from auditor.config.deepspeed_entry import read_deepspeed_entry
from auditor.config.entry_inference import read_inference_entry
from auditor.config.no_training import read_no_training
from auditor.config.trains_nothing import read_trains_nothing
from auditor.config.entry_absent import read_absent_entry, surely_absent, unread_before
from auditor.config.entry_imports import read_entry_imports
from auditor.config.entry_module import read_entry_module
from auditor.config.entry_path import in_checkout
from auditor.config.entry_schedule import names_no_schedule
from auditor.config.deepspeed_engine import deepspeed_engine, deepspeed_pipeline
from auditor.config.entry_stack import (
    UnknownStack,
    builds_no_pipeline,
    own_pipeline,
    packaged_entry,
    unknown_stack,
    unread_entry,
)
from auditor.config.bridge_mimo import read_mimo_components
from auditor.config.mlm_mimo import read_mlm_mimo
from auditor.config.entry_assign import read_entry_assignments
from auditor.config.lightning_entry import read_lightning_entry
from auditor.config.pipelining_script import read_pipelining_script
from auditor.config.model import EarlierCommand, LaunchConfig
from auditor.config import chosen_command, launcher_env, one_process
from auditor.config.pyenv import locate
from auditor.config.source_tree import judge_on_source_tree
from auditor.config.sourced_by import sourced_by
from auditor.config.training_command import Candidate, LaunchShell, command_fields
from auditor.errors import InputError
from auditor.findings import Finding
from auditor.rulebook.frameworks import launched_by
from auditor.rulebook.launchers import Spelling
from auditor.sources import version_file_release

# `# torch==2.10.0`, `# megatron-core==0.17.0`: the versions a script was written for.
_PIN = re.compile(r"(?<![\w.-])([A-Za-z][A-Za-z0-9_.-]*)\s*==\s*([0-9][0-9A-Za-z.+_-]*)")
# `# now with mbridge>=0.13.0, we can ...`: a bound on the releases the script was written for.
_BOUND = re.compile(r"(?<![\w.-])([A-Za-z][A-Za-z0-9_.-]*)\s*(>=|<=|~=|>(?!=)|<(?!=))\s*([0-9][0-9A-Za-z.+_-]*)")
# `# install mbridge=0.1.13 on all your node` (volcengine/verl @ b178a3cd56 examples/grpo_trainer/
# run_qwen3-235b_megatron_96gb.sh:10): one `=` is no pip pin, but the release the authors ran; read
# as a lower bound only (a newer release is still judged), and only for a distribution of the rules.
_INSTALLED = re.compile(r"(?<![\w.<>=!~-])([A-Za-z][A-Za-z0-9_.-]*)=(?!=)([0-9]+\.[0-9][0-9A-Za-z.+_-]*)")


# --- entry points --------------------------------------------------------------------------------


def read_launch(
    path: str | Path,
    *,
    environ: Mapping[str, str] | None = None,
    megatron_version: str | None = None,
    parser_roots: tuple[Path, ...] = (),
) -> LaunchConfig:
    """Read a launch script from disk; see parse_launch."""
    return parse_launch(read_script(path), str(path), environ=environ,
                        megatron_version=megatron_version, parser_roots=parser_roots)


def launch_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What of the audit's own environment stands for the cluster's: only the variables that size
    the world (launcher.world_variables), which a user sets to say what the job's allocation will
    be. Everything else there describes this machine."""
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in sorted(world_variables()) if name in environ}


def world_of(config: LaunchConfig, derived: Any) -> dict[str, Any]:
    """The world size for a report's header and where it came from: the derived value (which
    `--set world_size=N` pins), else the launch script's."""
    sources = "; ".join(f"{k}: {v}" for k, v in config.world_source.items())
    if derived is not None and isinstance(derived.value, int) and not isinstance(derived.value, bool):
        given = derived.source == "--set" or any(
            note in sources for note in ("the environment of this audit", "the script's fallback"))
        return {"world_size": derived.value, "world_source": derived.provenance if derived.source == "--set"
                else sources, "world_given": given}
    return {"world_size": config.world_size, "world_source": sources,
            "world_given": "the script's fallback" in sources}


def read_script(path: str | Path, *, lossless: bool = False) -> str:
    """A launch script's text, read once (it may be a pipe), as UTF-8 with NULs dropped as bash
    drops them. Bash runs bytes, so a byte that is not UTF-8 (a Latin-1 comment) is read as
    U+FFFD (`launch.not-utf8` says where); `lossless`: refused instead, for a caller that writes
    the text back (`fix`)."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(name, "no such launch script") from None
    except IsADirectoryError:
        raise InputError(name, "is a directory, not a launch script") from None
    except OSError as exc:
        raise InputError(name, f"cannot read: {exc.strerror or exc}") from None
    sample = b"\n".join(raw[:80].split(b"\n")[:2])  # what bash checks before running a file
    if b"\0" in sample:
        raise InputError(name, "bash refuses to run it: a NUL byte in its first line(s) makes it "
                               "'cannot execute binary file'", raw[: raw.index(b"\0")].count(b"\n") + 1)
    raw = raw.replace(b"\0", b"")  # further on, bash drops NUL bytes from the text it reads
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if not lossless:
            return raw.decode("utf-8-sig", errors="replace")
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(name, f"not UTF-8 text (byte 0x{raw[exc.start]:02x}): fix writes the "
                               "script back and would change those bytes", line) from None
    return text


def parse_launch(
    text: str,
    path: str = "<string>",
    *,
    environ: Mapping[str, str] | None = None,
    megatron_version: str | None = None,
    parser_roots: tuple[Path, ...] = (),
    command: str | None = None,
    which: int = 0,
) -> LaunchConfig:
    """Find the training command in `text` and read its flags, environment and world size.

    `environ`: variables the script inherits from the caller (the cluster's environment), used
    where the script reads a variable it never assigns. `megatron_version`: the megatron-core
    release the training script comes from, to check Megatron-LM flag spellings against it.
    `parser_roots`: that release's files, where its own argument parser may be read
    (auditor.config.frontend_parser; a checkout holding the script comes first).
    `command`: the training command line (`--command`), when the script hides it.
    `which`: the index of the training command to read, where the script runs several (a loop
    over parallel sizes); `config.commands` says how many (IndexError past the last).
    """
    diagnostics: list[Finding] = []
    if "\r\n" in text:
        line = text[: text.index("\r\n")].count("\n") + 1
        diagnostics.append(Finding(
            "launch.crlf", "warning",
            "the script has Windows (CRLF) line endings: bash reads the `\\r` as part of each line, "
            "so `\\` at a line end does not continue the command and values end in `\\r`; "
            "read here as if the line endings were LF",
            fix=f"dos2unix {path}", where=f"{path}:{line}"))
        text = text.replace("\r\n", "\n")
    if "\ufffd" in text:
        line = text[: text.index("\ufffd")].count("\n") + 1
        diagnostics.append(Finding(
            "launch.not-utf8", "info",
            "bytes that are not UTF-8 are read as U+FFFD (bash runs them as bytes): a flag value "
            "holding one is read as that character",
            fix=f"iconv -f latin1 -t utf-8 {path} (if it is Latin-1)", where=f"{path}:{line}"))
    spelling = Spelling.load(megatron_version)
    lexer = Lexer(text, path)
    tokens = lexer.tokens()
    nodes = ShellParser(tokens, path, diagnostics).parse()
    _refuse_what_bash_rejects(text, path, diagnostics)
    before = list(diagnostics)

    def walk(forced: dict[str, int]) -> LaunchShell:
        """The script walked as bash runs it, taking the branches `forced` names."""
        shell = LaunchShell(path, spelling, dict(environ or {}),
                            list(before) if forced else diagnostics, text.split("\n"))
        shell.forced = forced
        shell.allocate(lexer, tokens)
        shell.run(nodes)
        if shell.cwd_read:
            shell.diagnostics.append(Finding(
                "launch.cwd", "info",
                f"`pwd` (line {shell.cwd_read[0]}) is read as {shell.cwd}, the directory this audit runs "
                "in: a script's `pwd` is the directory the job is launched from",
                fix="run p2paudit from the directory the job is launched from",
                where=f"{path}:{shell.cwd_read[0]}"))
        return shell

    shell = walk({})
    if command is not None:
        _given_command(shell, command, path, text.count("\n") + 1)
    elif shell.exited is not None and shell.exited.status in _LAST_STATUS and not shell.exited.why:
        _ends_inert(shell, shell.exited, spelling, path)
    config = (_chosen(shell, walk, spelling, path, parser_roots, which) if command is None else None) \
        or _build(shell, spelling, path, parser_roots, which)
    config.text = text
    pins = _pins(lexer.comments)
    for name, version, _ in pins:
        config.pins.setdefault(name, version)
    for _, comment in lexer.comments:
        found = [(b.group(1), b.group(2), b.group(3)) for b in _BOUND.finditer(comment)]
        found += [(b.group(1), ">=", b.group(2)) for b in _INSTALLED.finditer(comment)]
        for written, op, version in found:
            name = written.lower().replace("_", "-")
            spec = f"{op}{version.rstrip('.')}"
            config.bounds[name] = f"{config.bounds[name]},{spec}" if name in config.bounds else spec
    judge_on_checkout(config, path)
    judge_on_framework_checkout(config, path)
    entry = find_script(path, config.script_read or config.script) if isinstance(config.script, str) else None
    if entry is not None:
        judge_on_source_tree(config, entry, path)
        # a module the script imports and cannot find; after a `cd` or a runner's working
        # directory, the file read is the one that runs only where it is found there
        moved = find_script(path, config.script_read or str(config.script), workdir=config.workdir)
        read_entry_imports(config, entry, path, unread_before(config, shell.opaque), copy_differs="" if moved == entry else (
            f"the command runs in {config.workdir}, where {config.script} is not this file"
            if config.workdir is not None else
            "a `cd` or a working-directory option before the command moves it to a directory not "
            f"known statically, whose {config.script} may be another copy"))
    torch_pins = [(v, ln) for name, v, ln in pins if name == "torch"]
    if len({pin for pin, _ in torch_pins}) > 1:  # config.torch_version judges each of them
        config.diagnostics.append(Finding(
            "launch.torch-pin", "warning",
            "several torch pins in comments: "
            + ", ".join(f"torch=={p} (line {ln})" for p, ln in torch_pins)
            + "; each is judged, and what they disagree on is undecided",
            fix="keep one `# torch==X.Y.Z` comment", where=f"{path}:{torch_pins[1][1]}"))
    read_deepspeed_entry(config)  # `deepspeed train.py`: the pipeline (or none) the script builds
    read_pipelining_script(config)  # `torchrun train.py` pipelining with torch itself
    read_no_training(config)  # an evaluation or inference entry of a framework's checkout
    read_lightning_entry(config)  # `python train.py` building nl.MegatronStrategy: its sizes
    read_entry_assignments(config)  # `--pp` of the entry's own argparse set on its model provider
    read_inference_entry(config)  # a text-generation engine or server at PP 1
    read_mimo_components(config)  # `--component language=tp=4,pp=2` of a Megatron-Bridge MIMO entry
    read_mlm_mimo(config)  # Megatron-LM's examples/mimo: module grids joined by a MultiModulePipelineCommunicator
    own_pipeline(config)  # `torchrun run_train.py` on nanotron's own pipeline engine: not covered
    deepspeed_pipeline(config)  # `torchrun train.py` building DeepSpeed's PipelineModule
    deepspeed_engine(config)  # `mpirun python train.py` on DeepSpeed's data-parallel engine
    read_trains_nothing(config)  # an entry training nothing on one rank or one stage (after the readers that name the run)
    unknown_stack(config)  # `torchrun train.py` handing the run to a package no rules model
    unread_entry(config)  # `torchrun -m $MODULE`, `deepspeed missing.py`: the stack is not known
    return config


def _refuse_what_bash_rejects(text: str, path: str, diagnostics: list[Finding]) -> None:
    """A script `bash -n` rejects does not run as written: an error naming the line (the
    construct this parser saw left open, where it saw one, and the line bash names)."""
    rejected = bash_rejects(text)
    if rejected is None:
        return
    line, message = rejected
    ours = next((d for d in diagnostics if d.kind == "launch.syntax"), None)
    if ours is not None and ours.where:
        opened = int(ours.where.rsplit(":", 1)[1])
        what = ours.message.split(";")[0].removeprefix("bash syntax error: ")
        raise InputError(path, f"bash rejects the script (`bash -n`): {what} for line {opened}; "
                               f"bash: line {line}: {message}", opened)
    raise InputError(path, f"bash rejects the script (`bash -n`), line {line}: {message}", line)


def _pins(comments: list[tuple[int, str]]) -> list[tuple[str, str, int]]:
    """(distribution, version, line) for every `name==X` written in a comment."""
    return [(pin.group(1).lower().replace("_", "-"), pin.group(2).rstrip("."), line)
            for line, text in comments for pin in _PIN.finditer(text)]


# --- from the training command to a LaunchConfig -------------------------------------------------


class NotAPipelineRun(InputError):
    """The launch script's command runs no pipeline parallelism (`swift sft`, `megatron export`):
    for `scan` a decided answer; for a command that needs a pipeline (simulate), bad input.
    `what` says what the run is."""

    def __init__(self, path: str, what: str, config: LaunchConfig | None = None) -> None:
        super().__init__(path, f"not a pipeline run: {what}")
        self.what = what
        self.config = config  # the launch as read: its launcher and findings go in the document


class NotCoveredRun(InputError):
    """The run trains on a stack with a pipeline engine no rules model (nanotron's): for `scan`
    an answer, NOT COVERED, saying what the run is, what the audit covers and `decide`, the step
    that decides it; for a command that needs a modelled pipeline (simulate), bad input."""

    def __init__(self, path: str, what: str, decide: str, config: LaunchConfig | None = None) -> None:
        super().__init__(path, f"not covered: {what}")
        self.what = what
        self.decide = decide
        self.config = config


def refuse_not_pipeline(config: LaunchConfig, stated: Mapping[str, str] | None = None) -> None:
    """Raise NotAPipelineRun when the launcher rules say the command runs no pipeline,
    NotCoveredRun when its entry trains on a pipeline engine the rules do not model, and
    UnknownStack when it hands the run to a package no rules model, or when the rule that says
    it runs no pipeline is not verified on the release the run uses (`stated`: --target's
    releases, over the script's pins)."""
    said = next((d for d in config.diagnostics if d.kind == "launch.not-pipeline"), None)
    if said is not None:
        beyond = unverified_release(config, said, stated or {})
        if beyond is not None:
            raise UnknownStack(config.path, beyond[0], beyond[1], config)
        raise NotAPipelineRun(config.path, said.message, config)
    other = next((d for d in config.diagnostics if d.kind == "launch.not-covered"), None)
    if other is not None:
        raise NotCoveredRun(config.path, other.message, other.detail["decide"], config)
    unknown = next((d for d in config.diagnostics if d.kind == "launch.unknown-stack"), None)
    if unknown is not None:
        raise UnknownStack(config.path, unknown.message, unknown.detail["decide"], config)


class CommandNotFollowed(InputError):
    """A script bash accepts whose training command this reader cannot follow: not bad input,
    an undecided run (exit 1) until `--command` gives the command line (`decide`)."""

    DECIDE = "--command 'torchrun ... train.py ...'"

    def __init__(self, path: str, what: str) -> None:
        super().__init__(path, f"{what}; give it with {self.DECIDE}")
        self.what = what


class ScriptExits(InputError):
    """A valid script that surely runs `exit` before any training command (`CONTAINER_IMAGE=""`,
    then `if [ -z "$CONTAINER_IMAGE" ]; then exit 1; fi`): a decided answer, the run does not
    start as written. `what` says where and why."""

    def __init__(self, path: str, what: str, line: int) -> None:
        super().__init__(path, what, line)
        self.what = what


def _stops_before_training(shell: LaunchShell, path: str) -> None:
    """Raise ScriptExits when the walk ended at an `exit` before any training command."""
    stop = shell.exited
    if stop is None or shell.candidates or shell.unfollowed or shell.last_resort:
        return  # after a program not followed, the exit may come after training (`... | tee log; exit`)
    def quoted(line: int) -> str:
        text = shell.lines[line - 1].strip() if stop.path == path and 0 < line <= len(shell.lines) else ""
        return f" (`{text}`)" if text else ""

    where = f"{path}:{stop.line}" if stop.path == path else f"{stop.path}:{stop.line}"
    because = (f", where the test at line {stop.tested}{quoted(stop.tested)} leads"
               if stop.tested and stop.tested != stop.line else "")
    why = f": {stop.why}" if stop.why else ""
    names = " and ".join(stop.unless)
    unless = (f", unless {names} {'comes' if len(stop.unless) == 1 else 'come'} from the caller's environment "
              "(the script sets it nowhere)" if stop.unless else "")
    raise ScriptExits(path, f"the script exits at line {stop.line}{quoted(stop.line)} before any training "
                            f"command{because}{why}{unless}: the run does not start as written ({where})",
                      stop.line)


def _given_command(shell: LaunchShell, command: str, path: str, after: int) -> None:
    """`--command '...'`: the user's training command line, run where the script ends (its
    variables set), in place of any the script runs."""
    shell.candidates.clear()
    shell.last_resort.clear()
    shell.unresolved_commands.clear()
    shell.exited = None  # the user's command runs, wherever the script's own walk stopped
    shell.given = True
    try:
        tokens = Lexer(command, "--command", after).tokens()
    except InputError as exc:
        raise InputError("--command", exc.cause) from None
    shell.run(ShellParser(tokens, "--command", shell.diagnostics).parse())
    shell.candidates.extend(shell.last_resort)  # the user says `python train.py` is the run
    if not shell.candidates:
        raise InputError("--command", f"is no training command: looked for {shell.spelling.looked_for()}")
    shell.diagnostics.append(Finding(
        "launch.given-command", "info",
        f"the training command is the one --command gives, read as if it were line {after + 1}, after "
        "the script's own lines", where=f"{path}:{after + 1}"))


# `exit 0`, `exit` and `exit $?` (bash(1) `exit [n]`: "If n is omitted, the exit status is that of
# the last command executed"): a script that ends as its last command did, no failure of its own.
# A bare `exit` is Exit.status "".
_LAST_STATUS = ("0", "", "$?", "${?}")
_BACKGROUND = re.compile(r"(?<![&>|])&\s*(#.*)?$")  # `cmd &` ends a line; `&&`, `2>&1` do not


def _ends_inert(shell: LaunchShell, stop: Exit, spelling: Spelling, path: str) -> None:
    """`python -m http.server; exit $?`: a script that ends with its last command's status (no
    failure of its own) is what it ran before that `exit`; what follows never runs and decides
    nothing, neither a training command nor a failed start (`echo start; exit $?; python gen.py`,
    `make html; exit 0; torchrun train.py`). Where all it ran is known to train nothing, or it
    ran no program at all, it is no run: NotAPipelineRun."""
    _no_launch(shell, path, _last_resort(shell, spelling, path), stop)
    if not (shell.candidates or shell.last_resort or shell.unfollowed or shell.opaque
            or shell.unresolved_commands or shell.hidden_from_job):
        raise NotAPipelineRun(path, f"{_skipped(shell, stop, path, 'before it runs any program')}")


def _skipped(shell: LaunchShell, stop: Exit, path: str, before: str) -> str:
    """Where the script ends (`exit 0`, `exit $?`) and the first command after it that may train
    (may_train), which never runs: the NOT A PIPELINE RUN message says the user's training line
    is skipped (`the script ends at line 3 with `exit 0` ...: the `torchrun` at line 4 never runs`)."""
    where = f"{path}:{stop.line}" if stop.path == path else f"{stop.path}:{stop.line}"
    status = f"`exit {stop.status}`" if stop.status not in ("", "$?", "${?}") else (
        f"`{' '.join(('exit', stop.status)).strip()}` (its last command's status, whatever it is)")
    inside = f" in the function `{stop.called[1]}` called at line {stop.called[0]}" if stop.called else ""
    said = f"the script ends at line {stop.line} with {status}{inside} {before}"
    if stop.path != path:
        return f"{said}; nothing after it runs ({where})"
    commands = list(simple_commands(ShellParser(Lexer("\n".join(shell.lines), path).tokens(), path, []).parse()))
    line, word = stop.called or (stop.line, "exit")  # after the call the exit ends in: its own line is not skipped
    at = next((k for k, c in enumerate(commands)  # the call as bash reads it: `"run"` calls `run`
               if c.line == line and c.words and command_fields(c, c.line)[0].value == word), len(commands))
    for c in commands[at + 1:]:
        trains = shell.may_train(command_fields(c, c.line)) if c.words else None
        if trains is not None:
            return f"{said}: the `{trains[0].value}` at line {c.line} never runs ({where})"
    return f"{said}; nothing after it runs ({where})"


def _last_resort(shell: LaunchShell, spelling: Spelling, path: str) -> str:
    """`python SCRIPT.py` with no launcher around it is the run's command only where the walk met
    no launcher command that may train, no command it did not follow that may train (`unfollowed`:
    a script not read, `ssh`, a program no rules name) and no code it could not see, and its entry
    is found here (config.pyenv.locate), or surely is nowhere the run may open it (the run does
    not start: entry_absent.surely_absent); else where the entry is not found, for the message."""
    if _training(shell.candidates, spelling, path) or shell.unfollowed or shell.opaque:
        return ""
    for candidate in shell.last_resort:
        scratch = LaunchConfig(path=path, launcher="", command_line=candidate.line, end_line=candidate.end_line)
        script = _in_container(candidate, torchrun_options(scratch, candidate.launcher, candidate.args, path,
                                                           spelling.python_runners)[1])
        scratch.script = _entry(candidate, script)
        scratch.env = _environment(shell, candidate)
        read_entry_module(scratch, path)
        entry, missing = locate(scratch)
        scratch.launch_dir, scratch.workdir, scratch.text = candidate.cwd, candidate.workdir, "\n".join(shell.lines)
        fetched = _fetched(candidate, script)
        if fetched or entry is None and not surely_absent(scratch, candidate.launcher, candidate, shell.opaque, path):
            return f"; line {candidate.line} runs `{candidate.invoked} {script}`, whose entry is not read: {fetched or missing}"
    shell.candidates.extend(shell.last_resort)
    return ""


def _entry(candidate: Candidate, script: Scalar) -> Scalar:
    """The entry `candidate` opens, `script` as its command names it (after `_in_container`):
    not the file of that name here where a fetch before it writes that file (`_fetched`). The
    one place every launcher's entry is read from (`wget -O train.py URL; torchrun train.py`)."""
    fetched = _fetched(candidate, script)
    return Symbolic(f"{script} ({fetched})") if fetched else script


def _fetched(candidate: Candidate, script: Scalar) -> str:
    """Where an entry is the file a fetcher writes earlier in the script (`wget
    https://.../preprocess_wudao2.py` then `python preprocess_wudao2.py`: Pai-Megatron-Patch
    a098ca5acb toolkits/pretrain_data_preprocessing/run_prepare_wudao.sh:10-12), that the run may
    open that file, fetched at run time and not read here, whatever file of that name is here (the
    checkout's copy is not surely what the URL serves); "" where no fetch writes it. Each path is
    relative to the working directory of its own line (`$PWD/x.py`: the directory the job starts
    in);
    where one of them is not known, the names decide (an extraction's `DIR/*` then none); a written
    path not known (`-O "$OUT"`) may be any entry."""
    if not isinstance(script, str):
        return ""

    def writes(path: str, workdir: str | None, cwd: str | None) -> bool:
        if path == UNKNOWN:
            return True
        for here, there in ((cwd, candidate.cwd), (workdir, candidate.workdir)):
            fetched = None if here is None or there is None else os.path.join(here, path)
            entry = None if there is None else os.path.join(there, script)
            if fetched is not None and entry is not None and os.path.isabs(fetched) == os.path.isabs(entry):
                return _holds(os.path.normpath(fetched), os.path.normpath(entry))
        # folders not comparable: the names decide, and an extraction's folder (`( cd /tmp && curl
        # URL | tar xz )`) holds the entry only where it is surely the entry's
        return os.path.basename(path) == os.path.basename(script)

    got = next(((line, program, url) for line, program, url, path, workdir, cwd in reversed(candidate.fetched)
                if writes(path, workdir, cwd)), None)
    return (f"it may be the file `{got[1]}` fetches at line {got[0]} ({got[2]}) at run time, not read here"
            if got else "")


def _holds(fetched: str, entry: str) -> bool:
    """Whether the file `fetched` (normalized), or an extraction's folder (`DIR/*`: fetch_target
    ANY), is the file `entry` (normalized, relative or absolute as `fetched` is)."""
    if os.path.basename(fetched) != ANY:
        return fetched == entry
    folder = os.path.dirname(fetched)
    return not entry.startswith("../") if folder in ("", ".") else entry.startswith(folder.rstrip("/") + "/")


def _in_container(candidate: Candidate, script: Scalar) -> Scalar:
    """The entry a command in a container (`docker run`, Candidate.inside) opens: a relative one
    is in the container's working directory, the file here only where a mount maps that folder;
    else not read (the script's folder is no fallback: the image holds its own files)."""
    if candidate.inside == "" or not isinstance(script, str) or os.path.isabs(script):
        return script
    if candidate.inside is None:
        return Symbolic(f"{script} in the container's working directory, which no mount maps to a folder here")
    here = os.path.join(candidate.inside, script)
    return here if os.path.isfile(here) else Symbolic(f"{script} in the container, mounted from {here}, not a file here")


def _training(candidates: list[Candidate], spelling: Spelling, path: str) -> list[Candidate]:
    """The commands the walk followed that may train a pipeline: those runs_no_pipeline says
    nothing of. A command that trains none (a checkpoint conversion, `python -m
    deepspeed.checkpoint.ds_to_universal`; `megatron export`) is no run a plain `python` command
    or one not followed would stand beside."""
    return [c for c in candidates if not runs_no_pipeline(c, spelling, path)]


def _unfollowed(shell: LaunchShell, most: int) -> str:
    """The first `most` commands the walk did not follow that may train, for the message: those
    whose program is not known statically first (the likeliest run), then in the script's order."""
    ordered = sorted(shell.unfollowed, key=lambda u: isinstance(u.program, str))
    return "".join(f"; {u.said()}" for u in ordered[:most])


def _beside_no_pipeline(shell: LaunchShell, spelling: Spelling, path: str, plain: str) -> str:
    """Where every command the walk followed trains no pipeline, what else it met that may: a
    command it did not follow that may train (`unfollowed`), code it could not see (but the
    script's own arguments of the `eval` that ran the command, `callers_words`), or a `python
    SCRIPT` whose entry is not read (`plain`); for the message, "" where there is none.
    The command that trains none is then not surely what the run is: a conversion after an
    unfollowed training command (`bash run_bf16.sh; python -m
    deepspeed.checkpoint.ds_to_universal ...`) is not all the script runs. `--command` says
    what the run is."""
    if not shell.candidates or shell.given or _training(shell.candidates, spelling, path):
        return ""
    said = _unfollowed(shell, 3) + plain
    # unseen code is listed after this by _build
    if not said and all(k in shell.callers_words for k in range(len(shell.opaque))):
        return ""
    first = shell.candidates[0]
    return (f"; line {first.line} runs `{first.invoked}`, which trains no pipeline, but the script "
            f"may run another command{said}")


def _no_launch(shell: LaunchShell, path: str, plain: str, stop: Exit | None = None) -> None:
    """Raise NotAPipelineRun where the script starts no process that could train: every command
    it runs is known (no word not known statically, no `eval` or `source` of code not read, no
    script not followed: `unfollowed`, `opaque`) and each is one the rules say trains nothing
    ([wrappers] `no_training` and `no_training_subcommands`: `docker build`, `pip`, `make html`;
    a runner's command judged as its own: `docker run IMAGE bash -c "..."`), no `python SCRIPT`
    is left whose entry was not read (`plain`), and no `--command` gave the run (`shell.given`:
    the user's command is then what runs). Text an `echo` prints is no command. `stop`: the
    `exit` that ends the script before its training line (_skipped names both)."""
    programs = list(dict.fromkeys(program for _, program in shell.inert if program))
    if (not programs or shell.candidates or shell.last_resort or shell.unfollowed or shell.opaque
            or shell.unresolved_commands or shell.hidden_from_job or shell.given or plain):
        return  # a script that runs no program at all (settings to `source`) names nothing it runs
    runs = ", ".join(f"`{p}`" for p in programs[:6]) + (f" and {len(programs) - 6} more" if len(programs) > 6 else "")
    ends = f"{_skipped(shell, stop, path, 'and starts no training process')}; " if stop else ""
    raise NotAPipelineRun(path, f"{ends or 'the script starts no training process: '}every command it runs "
                                f"{'before it ' if stop else ''}is known and none can train ({runs}; no launcher, "
                                "no Python entry)")


def _together(shell: LaunchShell, chosen: Candidate) -> str:
    """Why the shell may start other copies of a plain `python` command alongside it (several of
    them, a loop's included, or one in the background, `cmd &`): they may make up one world."""
    plain = [c for c in shell.candidates if c.launcher.get("one_process")]
    if len(plain) > 1:
        lines = sorted({c.line for c in plain})
        return (f"the script runs {len(plain)} `python` commands (line(s) "
                f"{', '.join(map(str, lines[:4]))}): together they may make up one world, unknown "
                "here; give it as --set world_size=N")
    last = shell.lines[chosen.end_line - 1] if 0 < chosen.end_line <= len(shell.lines) else ""
    if _BACKGROUND.search(last):
        return (f"line {chosen.line} runs it in the background (`&`): other copies may run beside it and "
                "make up one world, unknown here; give it as --set world_size=N")
    return ""


def _chosen(shell: LaunchShell, walk: Callable[[dict[str, int]], LaunchShell], spelling: Spelling, path: str,
            parser_roots: tuple[Path, ...], which: int) -> LaunchConfig | None:
    """Where the walk found no training command because what runs was chosen by an if/case it
    could not decide (auditor.config.chosen_command): command `which` of those the script may
    run, each found by walking it again down one way of those tests. None where that does not
    follow it: a way whose command is itself unknown, too many ways, or none that trains."""
    if shell.candidates or not shell.unresolved_commands:
        return None
    choices = chosen_command.deciding(shell)
    commands: list[tuple[LaunchShell, dict[str, int], int]] = []
    for forced in chosen_command.combinations(choices):
        way = walk(forced)
        unknown = _last_resort(way, spelling, path)
        if unknown or not way.candidates and (way.unfollowed or way.opaque):
            return None
        training = _training(way.candidates, spelling, path)
        if len(way.candidates) == 1 and for_style(way.candidates[0].launcher["style"]).cases:
            return None  # its configurations are counted by its reader: not one command each
        commands += [(way, forced, k) for k in range(max(len(training), 1) if way.candidates else 0)]
    if not commands:
        return None
    if which >= len(commands):
        raise IndexError(f"the script runs one of {len(commands)} training command(s), not {which + 1}")
    way, forced, k = commands[which]
    config = _build(way, spelling, path, parser_roots, k)
    config.commands = len(commands)
    chosen_command.note(config, path, choices, forced, len(commands))
    return config


def _build(shell: LaunchShell, spelling: Spelling, path: str,
           parser_roots: tuple[Path, ...] = (), which: int = 0) -> LaunchConfig:
    plain = _last_resort(shell, spelling, path)
    _stops_before_training(shell, path)
    beside = _beside_no_pipeline(shell, spelling, path, plain)
    _no_launch(shell, path, plain)
    if not shell.candidates or beside:
        unknown = beside or plain + _unfollowed(shell, 3)
        unseen = "".join(f"; line {line}: {what}" for line, what in shell.opaque[:2])
        unseen += "".join(f"; {what}" for what in shell.hidden_from_job[:2])
        if not shell.candidates and (callers := sourced_by(path)):  # a helper others read: they decide
            unseen += (f"; {len(callers)} script(s) beside it source it ({', '.join(callers[:3])}"
                       f"{', ...' if len(callers) > 3 else ''}): audit one of them, which gives what it reads")
        raise CommandNotFollowed(path, f"the training command could not be followed: looked for "
                                       f"{spelling.looked_for()}, also behind srun/env/nohup, in `bash -c`, "
                                       f"`eval` and here-documents{unknown}{unseen}")
    # A command that trains comes first: `swift export` caching a dataset before `megatron rlhf`
    # is not the run's command.
    training = _training(shell.candidates, spelling, path)
    # Where none trains a pipeline, one that trains at all (a launcher `subcommands` entry:
    # `swift sft` after `swift export` caches its dataset) is what the run is, and what the
    # headline names.
    rest = [c for c in shell.candidates if c not in training]
    ordered = training + sorted(rest, key=lambda c: c.subcommand not in c.launcher.get("subcommands", ()))
    # One command whose front end runs several configurations (a Hydra config's roles): `which`
    # is the configuration, read by the front end's reader (config.case).
    cases = len(ordered) == 1 and for_style(ordered[0].launcher["style"]).cases
    if which >= max(len(training), 1) and not cases:
        raise IndexError(f"the script runs {len(training)} training command(s), not {which + 1}")
    chosen = ordered[0 if cases else which]
    launcher = chosen.launcher
    config = LaunchConfig(path=path, launcher="", command_line=chosen.line, end_line=chosen.end_line,
                          launcher_line=chosen.word_line or chosen.line,
                          diagnostics=shell.diagnostics, commands=max(len(training), 1),
                          case=which if cases else 0)
    config.wrapper = [f.value for f in chosen.wrapper]
    config.launch_dir = chosen.cwd
    config.workdir = chosen.workdir
    config.copies = dict(shell.copies)
    config.env = _environment(shell, chosen)
    launcher_env.apply(config, launcher, chosen.args, chosen.wrapper, spelling)
    config.text = "\n".join(shell.lines)  # what a reader asks of the script (flags.wholly_unknown)
    config.branch_values = dict(shell.branch_values)
    config.callers_values = frozenset(shell.callers_values)
    config.earlier = [EarlierCommand(c.launcher.get("program") or c.invoked, c.subcommand, c.line, c.conditional,
                                     tuple(f.value for f in c.args))
                      for c in shell.candidates if c.line < chosen.line]
    config.opaque = list(shell.opaque)
    config.command_eval = chosen.evaluated
    args = chosen.args
    reader = for_style(launcher["style"])
    if launcher.get("program"):
        config.launcher = f"{launcher['program']} {chosen.subcommand}"
    elif reader.module_is_program:
        config.launcher = chosen.invoked if chosen.invoked.startswith("python -m ") else \
            f"{chosen.invoked} {_program(chosen)}"
    else:
        args, script = torchrun_options(config, launcher, args, path, spelling.python_runners)
        config.script = script
        config.launcher = chosen.invoked + (f" {entry_name(config, launcher, path)}" if script is not None else "")
        config.script = _entry(chosen, _in_container(chosen, script))
        _entry_in_checkout(config, path)
        read_entry_module(config, path)
        read_absent_entry(config, launcher, chosen, shell.opaque, path)
        shipped = _shipped_script(spelling, script, config)
        reader = for_style(shipped["style"]) if shipped else reader
    config.style = reader.style
    what = runs_no_pipeline(chosen, spelling, path)
    if what:
        config.diagnostics.append(Finding(
            "launch.not-pipeline", "info", what, where=f"{path}:{chosen.line}", detail={"command": config.launcher}))
    reader.read(config, args, launcher, spelling, path, parser_roots)
    if config.case >= config.commands:
        raise IndexError(f"the command runs {config.commands} configuration(s), not {config.case + 1}")
    if launcher.get("one_process"):
        one_process.world(config, launcher, path, _together(shell, chosen))
    elif not what or _sized(launcher):  # a conversion wrapper states no ranks: none to count
        world_size(config, launcher, chosen, spelling, path)
    chosen_command.guarded(config, path, training, chosen, shell.lines)
    for other in [c for c in training if c is not chosen]:
        config.diagnostics.append(Finding(
            "launch.several-commands", "warning",
            f"another training command at line {other.line}; this audit reads the first one, at line {chosen.line}",
            fix="audit one launch script per training command", where=f"{path}:{other.line}"))
    if chosen.conditional:
        config.diagnostics.append(Finding(
            "launch.conditional-command", "info",
            f"the training command at line {chosen.line} is inside an if/case/loop: "
            "variables set differently on other branches are read as symbolic",
            where=f"{path}:{chosen.line}"))
    _report_unexported(config, launcher, path, spelling.env_names)
    _backend(config, shell, spelling, path)
    return config


def _entry_in_checkout(config: LaunchConfig, path: str) -> None:
    """An absolute training script of the authors' machine, read from the checkout the launch
    script sits in (config.entry_path): said, so that no one takes it for the cluster's file."""
    instead = in_checkout(path, config.script) if isinstance(config.script, str) else None
    if instead is None:
        return
    config.script_read = str(instead)
    config.diagnostics.append(Finding(
        "launch.entry-in-checkout", "info",
        f"the training script {config.script} is not a file here; the launch script is in a checkout "
        f"holding it at the same tail path: {instead} is read in its place",
        fix=f"--command 'torchrun ... {instead} ...' gives another entry; the cluster's copy may differ",
        where=f"{path}:{config.command_line}", detail={"script": config.script, "read": str(instead)}))


def _shipped_script(spelling: Spelling, script: object, config: LaunchConfig) -> dict | None:
    """The `[[swift_script]]` entry of a script with a front end of its own, if `script` (the
    entry `config` locates) is one and lies where the rule holds (`_in_its_checkout`)."""
    return next((s for s in spelling.swift_scripts if isinstance(script, str)
                 and launched_by(script, ["*" + s["pattern"]]) and _in_its_checkout(s, config)), None)


def _in_its_checkout(shipped: dict, config: LaunchConfig) -> bool:
    """Whether a `[[swift_script]]` rule holds for the entry `config` locates: with no `checkout`,
    wherever its pattern matches; else it names a tool of that checkout, so the entry lies in the
    directory its pattern's path starts from (tools/checkpoint/X.py two folders down), which holds
    that distribution's version file (Megatron-LM's megatron/core/package_info.py), and builds no
    pipeline (entry_schedule.names_no_schedule). A tools/checkpoint/ of another repository, or one
    that trains DeepSpeed's PipelineModule, is read as any script (issue 22 item 6)."""
    if "checkout" not in shipped:
        return True
    found = locate(config)[0]
    if found is None:
        return False
    root = Path(found.path).resolve().parents[len(shipped["pattern"].split("/")) - 1]
    return version_file_release(root, shipped["checkout"]) is not None and names_no_schedule(config)


def _routed(spelling: Spelling, shipped: dict, script: object) -> str | None:
    """What a front end's own file run by path is where a launcher of the script rule's
    `front_ends` routes a subcommand to it and says that subcommand trains no pipeline:
    `torchrun swift/cli/rlhf.py` is `swift rlhf` (ms-swift swift/cli/main.py ROUTE_MAPPING)."""
    if not isinstance(script, str) or not script.endswith(".py"):
        return None
    parts = script.removesuffix(".py").split("/")
    for launcher in (x for x in spelling.launchers if x["name"] in shipped.get("front_ends", ())):
        for sub, module in launcher.get("routes", {}).items():
            tail = module.split(".")
            if parts[-len(tail):] == tail and (what := launcher.get("not_pipeline", {}).get(sub)):
                return f"{script} is the file `{launcher['program']} {sub}` runs (its ROUTE_MAPPING): {what}"
    return None


def _sized(launcher: dict) -> bool:
    """Whether the launcher rules say how many processes it starts (an environment variable,
    a flag or a config key)."""
    return any(launcher.get(k) for k in ("env_nproc", "nproc_flags", "nproc_keys"))


def _program(candidate: Candidate) -> str:
    """What a launcher whose module is the program runs: the `-m` module, or the file a
    `python_scripts` pattern matched (`python CKPT/zero_to_fp32.py`), its first argument."""
    if candidate.invoked.startswith("python -m "):
        return candidate.invoked.removeprefix("python -m ")
    return str(candidate.args[0].value) if candidate.args else ""


def runs_no_pipeline(candidate: Candidate, spelling: Spelling, path: str) -> str | None:
    """What a command that trains no pipeline is, from the rules (`not_pipeline` of its launcher's
    subcommand: `megatron export`; or of the script it starts: a checkpoint conversion); None
    for a training command. The one place that decides it."""
    what = candidate.launcher.get("not_pipeline", {}).get(candidate.subcommand)
    if what or candidate.launcher.get("program"):
        return what
    if for_style(candidate.launcher["style"]).module_is_program:  # `python -m MODULE`: the module
        return packaged_entry(_program(candidate))
    scratch = LaunchConfig(path=path, launcher="", command_line=candidate.line, end_line=candidate.end_line)
    script = _entry(candidate, _in_container(candidate, torchrun_options(scratch, candidate.launcher, candidate.args,
                                                                         path, spelling.python_runners)[1]))
    if scratch.script_module and isinstance(script, str) and (what := packaged_entry(script)):
        return what  # `deepspeed --module MODULE`, `ray job submit -- python3 -m MODULE`
    scratch.script = script
    shipped = _shipped_script(spelling, script, scratch)
    routed = _routed(spelling, shipped, script) if shipped else None
    if routed is not None:
        return routed
    if shipped and "not_pipeline" in shipped and names_no_schedule(scratch):
        return str(shipped["not_pipeline"]).replace("{script}", str(script))  # its code names no schedule
    if shipped or not isinstance(script, str):
        return None
    # A script of no known front end: what its own imports build (config.entry_stack).
    scratch.launcher = f"{candidate.invoked} {os.path.basename(script)}"
    scratch.env = {n: EnvVar(n, v.value, v.line, "export") for n, v in candidate.env.items()
                   if v.exported and not isinstance(v.value, list)} | candidate.inline
    read_entry_module(scratch, path)
    return builds_no_pipeline(scratch)


def _backend(config: LaunchConfig, shell: LaunchShell, spelling: Spelling, path: str) -> None:
    """A run on another backend than NCCL (Ascend's HCCL), by the variables the script sets and
    the files it sources: say what the run is and what the audit covers for it."""
    for backend in spelling.backends:
        names = [n for n in backend["env"] if n in config.env or n in shell.vars]
        paths = [p for p in shell.sourced if any(fnmatch.fnmatchcase(p, g) for g in backend["paths"])]
        if names or paths:
            signs = ", ".join([f"sets {n}" for n in names[:2]] + [f"sources {p}" for p in paths[:2]])
            config.diagnostics.append(Finding(
                "launch.backend", "warning",
                f"this run uses {backend['what']} ({signs}): {backend['covers']}",
                where=f"{path}:{config.command_line}", detail={"backend": backend["name"], "short": backend["short"],
                        "decide": backend["decide"]}))
            return


def _environment(shell: LaunchShell, chosen: Candidate) -> dict[str, EnvVar]:
    env: dict[str, EnvVar] = {  # line 0: the audit's environment; else the job's `#SBATCH` line,
        # or the `sbatch -N 4 FILE` line whose options the job's environment gets
        name: EnvVar(name, value, shell.allocation.get(name, 0), "export" if name in shell.by_sbatch else "environ",
                     shell.allocation_file.get(name, ""))
        for name, value in shell.environ.items()}
    for name, var in chosen.env.items():
        if isinstance(var.value, list):
            continue
        if var.exported:
            env[name] = EnvVar(name, var.value, var.line, "export")
        elif name not in shell.referenced:
            env[name] = EnvVar(name, var.value, var.line, "assign")
    for name, given in chosen.inline.items():
        # `export X=b` (or a plain `X=b`) then `X=b cmd`: the command sees b from the script's own
        # setting too once the prefix goes, so that setting of the same value is the run's other
        # setting of X, which a fix edits too (fix.script); one of another value (`export X=a`)
        # gives no bad value and stays, as every other command reads it (review r43-scan-shell)
        shadowed = env.get(name)
        kept = (shadowed is not None and shadowed.how in ("export", "assign") and shadowed.line > 0
                and not shadowed.path and shadowed.value == given.value)
        env[name] = replace(given, others=(shadowed,)) if kept and shadowed is not None else given
    return env


def _report_unexported(config: LaunchConfig, launcher: dict, path: str,
                       read_by_rules: frozenset[str]) -> None:
    """A variable set without `export` that the launcher (a warning) or a rule (info) reads;
    one that nothing known reads is the script's own business and not reported."""
    read_by_launcher = {launcher.get("env_nproc"), launcher.get("env_nnodes"), "CUDA_VISIBLE_DEVICES"}
    for var in config.env.values():
        if var.how != "assign":
            continue
        important = var.name in read_by_launcher or var.name.startswith("PET_")
        if not important and var.name not in read_by_rules:
            continue
        config.diagnostics.append(Finding(
            "launch.not-exported", "warning" if important else "info",
            f"{var.name} is set at line {var.line} but not exported: the training command sees it only "
            f"if the calling environment already exports {var.name}",
            fix=f"export {var.name}=... (or put it before the command on the same line)",
            where=f"{path}:{var.line}"))
