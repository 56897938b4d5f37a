"""What one value of a launcher's environment option says (srun/sbatch `--export=[ALL,]NAME=VALUE`,
mpirun `-x NAME=VALUE`), by the launcher's rule (`env_separator`, `env_keep_all`, `env_keep_none`):
read by config.launcher_env for the command a launcher starts and by the job file walk for
`sbatch --export=...` (config.training_command)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from auditor.bash.values import Field, OptionWords, Partial, Scalar, Symbolic, segments

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Export:
    """`keep_all`: the caller's environment passes (ALL, or a launcher that only adds);
    `given`: NAME=VALUE settings; `named`: NAMEs whose caller's value passes; `opened`: a part not
    known statically that may name any variable ("" where none)."""

    keep_all: bool
    given: dict[str, Scalar] = field(default_factory=dict)
    named: set[str] = field(default_factory=set)
    opened: str = ""


def option_values(rule: dict, words: list[Field]) -> list[tuple[Scalar, int]]:
    """The values of `rule`'s environment options among `words`: `--export=V`, `--export V`."""
    out: list[tuple[Scalar, int]] = []
    for k, f in enumerate(words):
        if isinstance(f.value, OptionWords):  # options only a branch may give (`SRUN+=(--export=...)`)
            given = option_values(rule, [Field(w if isinstance(w, (str, Symbolic)) else str(w), f.line)
                                         for w in f.value.words])
            out += [(_may_be(rule, value), line) for value, line in given]
            continue
        head = segments(f.value)[0]
        if head[1]:
            continue
        option, eq, _ = head[0].partition("=")
        if option not in rule.get("env_options", ()):
            continue
        if eq:
            out.append((_after(f.value, len(option) + 1), f.line))
        elif k + 1 < len(words):
            out.append((words[k + 1].value, words[k + 1].line))
    return out


def parse(rule: dict, value: Scalar, said: str) -> Export:
    """One option value as the launcher `rule` reads it; `said` names it in an unknown value."""
    out = Export(keep_all=not rule.get("env_keep_all"))
    for text, unknown in _parts(value, rule.get("env_separator", "")):
        name, eq, val = text.partition("=")
        if unknown and not (eq and _NAME.fullmatch(name)):
            out.opened = out.opened or text  # may name any variable, or be ALL/NONE
        elif text == rule.get("env_keep_all"):
            out.keep_all = True
        elif text in rule.get("env_keep_none", ()):
            continue
        elif eq and _NAME.fullmatch(name):
            out.given[name] = Symbolic(f"${name}, which {said} sets to {val}") if unknown else val
        elif _NAME.fullmatch(text):
            out.named.add(text)
    return out


def effect(rule: dict, value: Scalar, said: str, caller: Mapping[str, object],
           read: frozenset[str]) -> tuple[set[str], dict[str, Scalar], str]:
    """What one option value does to the environment of the program the launcher starts, given
    the caller's environment (values by name): (the names it drops, the values it sets, a note naming
    the variables a rule reads (`read`) that it keeps from the program, "" where none). srun(1):
    without ALL only SLURM_* (`env_always`) and the names listed pass; with ALL the caller's own
    value wins (`env_caller_wins`); a part not known statically makes unknown every variable a
    rule reads that nothing known settles."""
    export = parse(rule, value, said)
    always = rule.get("env_always", "")
    drops = ({n for n in set(caller) - export.named if not (always and n.startswith(always))}
             if not export.keep_all and not export.opened else set())
    wins = bool(rule.get("env_caller_wins")) and export.keep_all
    sets = {n: v for n, v in export.given.items() if not (wins and n in caller)}
    if export.opened:
        sets |= {n: Symbolic(f"${n}, which `{export.opened}` in {said} may set")
                 for n in read - set(export.given) if not (wins and n in caller)}
    hidden = sorted(drops & read)
    kept = sorted(n for n in set(export.given) - set(sets) if caller[n] != export.given[n])
    note = "; ".join(
        [f"{said} passes only SLURM_* and the names it lists: the caller's {', '.join(hidden)} does not reach "
         "the program"] * bool(hidden)
        + [f"{said} lists {', '.join(kept)}, but the caller's own value wins (ALL)"] * bool(set(kept) & read))
    return drops, sets, note


def _may_be(rule: dict, value: Scalar) -> Scalar:
    """An option value only an undecided branch gives: each NAME=VALUE it sets may be set or not
    (unknown); `ALL` stays (the launcher's default keeps the caller's environment too); one that
    may drop the caller's environment (no ALL) may leave any variable unknown."""
    keep, separator = rule.get("env_keep_all"), rule.get("env_separator", "")
    if not isinstance(value, str) or not separator:
        return Symbolic(str(value))
    parts = value.split(separator)
    if keep and keep not in parts:
        return Symbolic(f"(on a branch) {value}")  # names no variable: may set any
    pieces: list[tuple[str, bool]] = []
    for n, part in enumerate(parts):
        pieces += [(separator, False)] * bool(n) + [(part, part != keep)]
    return Partial(value, tuple(pieces))


def _after(value: Scalar, cut: int) -> Scalar:
    """`value` without its first `cut` characters (`--export=`), its unknown parts kept."""
    pieces = list(segments(value))
    pieces[0] = (pieces[0][0][cut:], False)
    return Partial("".join(t for t, _ in pieces), tuple(pieces)) if len(pieces) > 1 else pieces[0][0]


def _parts(value: Scalar, separator: str) -> list[tuple[str, bool]]:
    """The value split at `separator` in its known text: (text, whether part of it is unknown)."""
    parts: list[tuple[str, bool]] = [("", False)]
    for text, unknown in segments(value):
        chunks = text.split(separator) if separator and not unknown else [text]
        for n, chunk in enumerate(chunks):
            if n:
                parts.append(("", False))
            parts[-1] = (parts[-1][0] + chunk, parts[-1][1] or unknown)
    return [p for p in parts if p[0] or p[1]]
