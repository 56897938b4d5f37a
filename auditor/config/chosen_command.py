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
from auditor.config.training_command import LaunchShell
from auditor.findings import Finding

MAX_WALKS = 8  # more combinations of choices than this: the command stays not followed
KIND = "launch.chosen-command"  # the finding naming what chose a command (commandcases reads it)


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
