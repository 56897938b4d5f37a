"""The environment a launcher's own options give the command it starts (issue 22 items 1/4/9):
srun's `--export=[ALL,|NONE,]NAME=VALUE[,NAME]` (also `--export NAME=VALUE`, two words) and
mpirun's `-x NAME=VALUE`, whether the launcher starts the training script itself (`srun python
pretrain_gpt.py`) or wraps another launcher (`srun --export=ALL,... torchrun ...`).

How each launcher reads the option is rules data (rules/megatron-lm.toml [[launcher]]
`env_options`, `env_separator`, `env_keep_all`, `env_keep_none`, `env_always`, `env_caller_wins`).
Slurm's srun(1): without ALL only SLURM_* and the names listed reach the tasks; with ALL the
caller's own value of a name wins over the one listed. A part of the value not known statically
makes unknown only the variables it may name: its own, after a known `NAME=`, else every variable
a rule reads (the caller's kept where ALL lets the caller's value win)."""

from __future__ import annotations

import os
import re

from auditor.bash.values import EnvVar, Field, Partial, Scalar, Symbolic, segments
from auditor.config.model import LaunchConfig
from auditor.config.training_command import is_interpreter
from auditor.rulebook.launchers import Spelling

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALLER = ("export", "environ", "inline")  # how a variable of the launcher's own environment is set


def apply(config: LaunchConfig, launcher: dict, args: list[Field], wrapper: list[Field],
          spelling: Spelling) -> None:
    """Reads the environment options of `launcher` among `args` (up to the program it starts)
    and of a launcher in `wrapper` (`srun --export=... torchrun`) into `config.env`."""
    for rule, options, inner in _option_words(launcher, args, wrapper, spelling):
        for word, line in options:
            _read(config, rule, word, line, inner)


def _option_words(launcher: dict, args: list[Field], wrapper: list[Field],
                  spelling: Spelling) -> list[tuple[dict, list[tuple[Scalar, int]], bool]]:
    """(rule, [(value, line)], whether a shell runs between it and the command) per launcher."""
    shells = set(spelling.shells)
    found = []
    for i, f in enumerate(wrapper):
        rule = next((e for e in spelling.launchers if e.get("env_options")
                     and os.path.basename(str(f.value)) in e.get("programs", ())), None)
        if rule is not None:
            rest = wrapper[i + 1:]
            end = next((j for j, g in enumerate(rest) if os.path.basename(str(g.value)) in shells), len(rest))
            found.append((rule, _values(rule, rest[:end]), end < len(rest)))
    if launcher.get("env_options"):
        end = next((j for j, g in enumerate(args) if isinstance(g.value, str) and not g.value.startswith("-")
                    and (is_interpreter(os.path.basename(g.value), launcher) or g.value.endswith(".py"))), len(args))
        inner = any(os.path.basename(str(g.value)) in shells for g in wrapper)
        found.append((launcher, _values(launcher, args[:end]), inner))
    return found


def _values(rule: dict, words: list[Field]) -> list[tuple[Scalar, int]]:
    """The values of `rule`'s environment options among `words`: `--export=V`, `--export V`."""
    out = []
    for k, f in enumerate(words):
        head = segments(f.value)[0]
        if head[1]:
            continue
        option, eq, _ = head[0].partition("=")
        if option not in rule["env_options"]:
            continue
        if eq:
            out.append((_after(f.value, len(option) + 1), f.line))
        elif k + 1 < len(words):
            out.append((words[k + 1].value, words[k + 1].line))
    return out


def _after(value: Scalar, cut: int) -> Scalar:
    """`value` without its first `cut` characters (`--export=`), its unknown parts kept."""
    pieces = list(segments(value))
    pieces[0] = (pieces[0][0][cut:], False)
    return Partial("".join(t for t, _ in pieces), tuple(pieces)) if len(pieces) > 1 else pieces[0][0]


def _parts(value: Scalar, separator: str) -> list[tuple[str, bool]]:
    """The value split at `separator` in its known text: (text, whether part of it is unknown)."""
    pieces = segments(value)
    parts: list[tuple[str, bool]] = [("", False)]
    for text, unknown in pieces:
        chunks = text.split(separator) if separator and not unknown else [text]
        for n, chunk in enumerate(chunks):
            if n:
                parts.append(("", False))
            parts[-1] = (parts[-1][0] + chunk, parts[-1][1] or unknown)
    return [p for p in parts if p[0] or p[1]]


def _read(config: LaunchConfig, rule: dict, value: Scalar, line: int, inner: bool) -> None:
    """One option value into `config.env`, as the launcher `rule` reads it."""
    option = rule["env_options"][0]
    said = f"{rule.get('name')}'s {option}={value} (line {line})"
    keep_all = not rule.get("env_keep_all")
    given: dict[str, Scalar] = {}
    named: set[str] = set()
    opened = ""
    for text, unknown in _parts(value, rule.get("env_separator", "")):
        name, eq, val = text.partition("=")
        if unknown and not (eq and _NAME.fullmatch(name)):
            opened = opened or text  # may name any variable, or be ALL/NONE
        elif text == rule.get("env_keep_all"):
            keep_all = True
        elif text in rule.get("env_keep_none", ()):
            continue
        elif eq and _NAME.fullmatch(name):
            given[name] = Symbolic(f"${name}, which {said} sets to {val}") if unknown else val
        elif _NAME.fullmatch(text):
            named.add(text)
    caller = {n for n, v in config.env.items() if v.how in _CALLER and (v.line < line or (v.line == line and not inner))}
    always = rule.get("env_always", "")
    if not keep_all and not opened:
        for name in caller - named:
            if not (always and name.startswith(always)):
                del config.env[name]
    wins = rule.get("env_caller_wins") and keep_all
    for name, setting in given.items():
        kept = config.env.get(name)
        if wins and name in caller or kept is not None and kept.line >= line and kept.how != "inline":
            continue  # the caller's own value, or one set inside the shell the launcher starts
        config.env[name] = EnvVar(name, setting, line, "export")
    if opened:
        for name in Spelling.load(None).env_names - set(given):
            if not (wins and name in caller):
                config.env[name] = EnvVar(name, Symbolic(f"${name}, which `{opened}` in {said} may set"),
                                          line, "export")
