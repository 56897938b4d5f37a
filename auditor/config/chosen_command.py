"""A training command the script picks by a value it does not know: one of several strings set
by an if/case over `$1` (or a variable the caller may set), then run with `eval "$cmd"` or `$cmd`
(microsoft/Megatron-DeepSpeed examples_deepspeed/finetune_hf_llama/finetune_llama.sh). The
merged walk cannot follow it; the script is walked again once per way those tests can go
(auditor.bash.choices), and each command found is one the script may run, judged as the
commands of a loop are (analysis/commandcases.py: the worst verdict, every command's named)."""

from __future__ import annotations

import itertools

from auditor.bash.choices import Choice
from auditor.bash.values import segments
from auditor.config.model import LaunchConfig
from auditor.config.training_command import Candidate, LaunchShell
from auditor.findings import Finding

MAX_WALKS = 8  # more combinations of choices than this: the command stays not followed
KIND = "launch.chosen-command"  # the finding naming what chose a command (commandcases reads it)
GUARDED = "launch.caller-runs"  # the finding naming the commands a caller's variable lets run (commandcases)
MAX_QUOTED = 80  # a longer stop line (commands sharing it) is named by its number alone


def deciding(shell: LaunchShell) -> list[Choice]:
    """The undecided if/case statements that made the value an unfollowed command runs unknown
    (`line 128 runs ${task_args}`), in script order."""
    unknown = [text for f in shell.unresolved_commands for text, is_unknown in segments(f.value) if is_unknown]
    found = {c.key: c for symbol, chosen in shell.chosen_by.items() if any(symbol in text for text in unknown)
             for c in sorted(chosen, key=lambda c: c.line)}
    return sorted(found.values(), key=lambda c: c.line)


def combinations(choices: list[Choice]) -> list[dict[str, int]]:
    """Every way the choices can go together (none past MAX_WALKS)."""
    ways = list(itertools.product(*(range(c.options) for c in choices)))
    if not choices or len(ways) > MAX_WALKS:
        return []
    return [{c.key: taken for c, taken in zip(choices, way)} for way in ways]


def what_chooses(choices: list[Choice]) -> str:
    return " and ".join(f"`{c.test}` (line {c.line})" for c in choices)


def note(config: LaunchConfig, path: str, choices: list[Choice], forced: dict[str, int], total: int) -> None:
    """Say that this command is one of `total` the script may run, and which branches lead to it."""
    branches = ", ".join(f"branch {forced[c.key] + 1} of {c.options} at line {c.line}" for c in choices)
    config.diagnostics.append(Finding(
        KIND, "info",
        f"the training command is built from strings an if/case chooses by a value the script does not "
        f"know ({what_chooses(choices)}): it runs one of {total} commands; this one is the one {branches} "
        "leads to, and each is judged",
        fix="give the command the job runs with --command '...'", where=f"{path}:{config.command_line}",
        detail={"chosen_by": what_chooses(choices), "commands": total}))


def guarded(config: LaunchConfig, path: str, training: list[Candidate], chosen: Candidate, lines: list[str]) -> None:
    """Say which training commands run only where the caller gives a variable that a stop past an
    earlier command tests (bash.walk `_stops`: `[ "${RUN_EVAL:-0}" = 1 ] || exit 0` between
    two), each judged as a command the caller's value chooses: the default run ends at the stop.
    The commands are told apart by their place in the run (the walk's order), never by their line:
    a loop's commands, or `T pp4; [ ... ] || exit 0; T pp3`, share one (review r43-scan-shell
    item 1); `caller_only` says whether this document's command (`chosen`) is one of them."""
    later = [k for k, c in enumerate(training) if c.after]
    if not later:
        return
    stop = training[later[0]].after[0]
    names = " and ".join(dict.fromkeys(n for k in later for g in training[k].after for n in g.names))
    text = lines[stop.line - 1].strip() if stop.path == path and 0 < stop.line <= len(lines) else ""
    quoted = f" (`{text}`)" if text and len(text) <= MAX_QUOTED else ""
    where = f"line {stop.line}{quoted}" if stop.path == path else f"{stop.path}:{stop.line}"
    runs = ", ".join(f"{k + 1} (line {training[k].line})" for k in later)
    said = (f"the training command{'s' if len(later) > 1 else ''} {runs} "
            f"run{'' if len(later) > 1 else 's'} only where the caller sets {names}")
    config.diagnostics.append(Finding(
        GUARDED, "info",
        f"{said}: {where} ends the script, after an earlier command ran, where the caller leaves {names} unset"
        f"{f' ({stop.what})' if stop.what else ''}; each training command is judged",
        fix=f"give the command of the run with --command '...' (or audit the run with {names} set)",
        where=f"{path}:{training[later[0]].line}",
        detail={"guarded": f"{said}, {where} ending the default run before", "names": names,
                "commands": [k + 1 for k in later], "caller_only": bool(chosen.after)}))
