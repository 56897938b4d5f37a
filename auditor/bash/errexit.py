"""`set -e` and an assignment whose command substitution surely fails (issue 22 item 4).

Pai-Megatron-Patch@a098ca5acb examples/qwen1_5/run_finetune_megatron_qwen.sh:3-6 runs `set -e`,
then `MEGATRON_PATCH_PATH=$( dirname $( dirname ${CURRENT_DIR}))` with CURRENT_DIR set nowhere in
the script. Unquoted, an unset variable expands to no word at all, so the inner `dirname` gets no
operand: coreutils prints "missing operand" and exits 1, printing nothing on stdout; the outer
one gets no operand either and fails the same way. An assignment with no command name exits
with the status of its last command substitution (bash(1), SIMPLE COMMAND EXPANSION), and under
`set -e` a failing simple command ends the shell (bash(1), `set -e`). Which programs fail
without an operand is data (rules/megatron-lm.toml `[wrappers] operand_required`).

Certain only where every operand is such an expansion (or such a substitution): a quoted `"$X"`
is one empty operand, `${X:-d}` a default, anything else text this reader does not judge. The
variable being unset is what the script says; the caller's environment may still set it, which
the verdict says (`Exit.unless`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

# `prog [-opts] OPERANDS`, the program a bare word (no path, no quotes).
_CALL = re.compile(r"\s*([A-Za-z][\w.-]*)((?:\s+-[A-Za-z-]+)*)(?:\s+(.*?))?\s*", re.S)
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def failing_substitution(command: str, required: frozenset[str],
                         unset: Callable[[str], bool]) -> tuple[str, list[str]] | None:
    """(the program, the unset variables) where the command substitution `$(command)` surely
    fails: a program of `required` whose every operand expands to no word; None otherwise."""
    m = _CALL.fullmatch(command)
    if m is None or m.group(1) not in required:
        return None
    names: list[str] = []
    for word in _words(m.group(3) or ""):
        var = _VAR.fullmatch(word)
        if var is not None and unset(var.group(1) or var.group(2)):
            names.append(var.group(1) or var.group(2))
            continue
        inner = failing_substitution(word[2:-1], required, unset) if word.startswith("$(") and \
            word.endswith(")") else None
        if inner is None:
            return None  # an operand that may give a word
        names += inner[1]
    return m.group(1), names


def _words(text: str) -> list[str]:
    """Blank-separated words, a `$( ... )` kept whole however it nests; a quote makes the text
    one this reader does not judge (an empty word, not none): returned as is, matching nothing."""
    words, current, depth = [], "", 0
    for k, c in enumerate(text):
        if c in "\"'`\\":
            return [text]
        if c == "(" and k and text[k - 1] == "$":
            depth += 1
        elif c == ")" and depth:
            depth -= 1
        if c.isspace() and not depth:
            if current:
                words.append(current)
            current = ""
            continue
        current += c
    return words + ([current] if current else [])


def errexit_change(args: list[str]) -> bool | None:
    """What `set ARGS` does to errexit: True (`-e`, `-o errexit`, `-xe`), False (`+e`, `+o
    errexit`), None (nothing)."""
    change = None
    for k, arg in enumerate(args):
        if arg in ("-o", "+o") and k + 1 < len(args) and args[k + 1] == "errexit":
            change = arg == "-o"
        elif re.fullmatch(r"[-+][a-zA-Z]+", arg) and "e" in arg and arg not in ("-o", "+o"):
            change = arg.startswith("-")
        elif arg == "--":
            break
    return change
