"""A wrapper that runs its command with words read from its input (rules [wrappers] input_words:
xargs(1) "builds and executes command lines from standard input"): its command is the words after
its own options, which end at its first operand (its getopt grammar, auditor.bash.getopt: in
`xargs -n1 numactl -i all python train.py` the `-i` is numactl's), and the words it reads go after
them, or, with `-I R` (`-i[R]`, `--replace[=R]`; "{}" where none is given), where R stands in
them. Those words are not known here: read on through the command (a wrapper's, `xargs -L 1 srun
-N 1`, whose program they then are; `bash train.sh`'s arguments), they are one word not known
statically, never none. With no command xargs runs echo."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable

from auditor.bash.getopt import Grammar, read
from auditor.bash.values import Field, Scalar, Symbolic, concat
from auditor.rulebook.launchers import Spelling

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")  # `env A=1 xargs ...`
_ECHO = "echo"  # xargs(1): "The command ... default is echo"


def through_input(fields: list[Field], spelling: Spelling, piped: str | None = None,
                  written: Callable[[object], str | None] | None = None) -> list[Field]:
    """`fields` with the first input-words wrapper in the command's wrapper position (after only
    wrappers, their options, numbers and assignments: `nohup xargs ...`) replaced by its command as it runs:
    that wrapper, then its command with the words it reads. Unchanged where there is none. Those
    words are known where its input is text the script writes out (`piped`: `echo 3 | xargs`; a
    file of `input_files` whose text `written` gives), else one word not known."""
    at = _wrapper_at(fields, spelling)
    if at is None:
        return fields
    name = os.path.basename(str(fields[at].value))
    words = read([f.value for f in fields[at + 1:]], Grammar.of(spelling.option_grammar.get(name, {})))
    replace, plain, most = None, True, None
    for option in words.options:
        if option.name in spelling.input_words[name]:
            replace = option.value if isinstance(option.value, str) and option.value else "{}"
        elif option.name in spelling.input_files.get(name, ()):
            piped = written(option.value) if written is not None else None
        elif option.name in spelling.input_batch.get(name, ()) and isinstance(option.value, str) \
                and option.value.isdigit():
            most = int(option.value)
        elif option.name not in spelling.input_plain.get(name, ()):
            plain = False  # `-d,`, `-0`, `-p`: the words are split otherwise, or asked for
    piped = piped if plain else None
    start = at + 1 + words.operands[0] if words.operands else len(fields)
    command = fields[start:] or [Field(_ECHO, fields[at].line)]
    read_in = _known_words(piped, replace is not None)
    if read_in is not None and most is not None and (replace is not None or len(read_in) > most):
        read_in = None  # `echo 3 4 | xargs -n 1 CMD`: a command per word, never one with both; with -I, GNU's warning
    unknown = Symbolic(f"$(the words {name} reads from its input)")  # read again (`bash -c`): unknown still
    if replace is None:
        added = ([Field(w, command[-1].line) for w in read_in] if read_in is not None
                 else [Field(unknown, command[-1].line, unsplit=True)])
        command = [*command, *added]
    else:
        given: Scalar = read_in[0] if read_in is not None else unknown
        command = [Field(concat(_split(f.value, replace, given)), f.line) if isinstance(f.value, str)
                   and replace in f.value else f for f in command]
    return [*fields[:at + 1], *command]


def _known_words(text: str | None, replacing: bool) -> list[str] | None:
    """The words xargs(1) reads from `text` for one command: blank-separated, with its quotes
    (shlex's POSIX rules) appended; with a replace-str, the one input line, leading blanks dropped
    ("unquoted blanks do not terminate input items; instead the separator is the newline
    character"). None where not known, or where it would run the command more than once (lines)."""
    if text is None:
        return None
    if replacing:
        lines = [line.lstrip(" \t") for line in text.split("\n") if line.strip()]
        ok = len(lines) == 1 and not any(c in lines[0] for c in "'\"\\")
        return lines if ok else None
    try:
        return shlex.split(text)
    except ValueError:
        return None


def _wrapper_at(fields: list[Field], spelling: Spelling) -> int | None:
    """Where an input-words wrapper stands among the wrappers the command starts with."""
    for k, f in enumerate(fields):
        value = f.value if isinstance(f.value, str) else None
        base = os.path.basename(value) if value is not None else None
        if base in spelling.input_words:
            return k
        if value is None or not (base in spelling.wrappers or (k and (
                value.startswith("-") or value.isdigit() or _ASSIGNMENT.match(value)))):
            return None
    return None


def _split(word: str, replace: str, given: Scalar) -> list[Scalar]:
    """`word` with each `replace` in it the words read (`--file={}`: `--file=` and them)."""
    pieces: list[Scalar] = []
    for k, text in enumerate(word.split(replace)):
        if k:
            pieces.append(given)
        pieces.append(text)
    return pieces
