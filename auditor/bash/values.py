"""What a walk over a script holds: shell values (`Symbolic` where unresolved, never guessed),
variables, expanded words (fields) and bash's word splitting, joining and integer arithmetic over
them."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Symbolic:
    """A shell value that could not be resolved statically, e.g. `${MODEL_PATH}`."""

    text: str

    def __str__(self) -> str:
        return self.text


Scalar = str | bool | int | float | Symbolic | None


@dataclass
class EnvVar:
    name: str
    value: Scalar
    line: int
    # "export", "inline" (VAR=x cmd), "assign" (VAR=x on its own line, never exported and never
    # used by the script: the command sees it only if the calling environment already exports it),
    # "environ" (the inherited environment the caller gave the reader; line 0), "python" (set by
    # the entry script before torch reads it: auditor.config.pyenv), "option" (a launcher's own
    # environment option, srun --export=ALL,NAME=value or mpirun -x NAME=value: config.launcher_env),
    # "set" (`--set env.NAME=VALUE`; line 0, no file)
    how: str
    path: str = ""  # the file `line` is in, where not the launch script (the entry script)
    # The run's other settings of this name, which a fix edits too: the export a Python setting
    # replaces, the Python setdefault an export keeps (auditor.config.pyenv).
    others: tuple[EnvVar, ...] = ()

    def where(self, launch_path: str) -> str:
        """`file:line` of the setting."""
        return f"{self.path or launch_path}:{self.line}"


@dataclass(frozen=True, eq=False)
class Partial(Symbolic):
    """A value known in part: `--tp ${TP} --pp 4` keeps its literal text, so that splitting it
    (unquoted `$OPTS`, `eval $cmd`) gives every known word and leaves only `${TP}` unknown.
    `segments` is (text, unknown) in order; it compares as the Symbolic of the same text."""

    segments: tuple[tuple[str, bool], ...] = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Symbolic) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


@dataclass(frozen=True, eq=False)
class OptionWords(Symbolic):
    """An array's unknown rest (`${NAME[@]}`, `unknown_rest`) whose words are all options, each
    perhaps with its value: what branches of an undecided test or a loop add to a head they share
    (`srun_base+=(--container-mounts="${mount}")` under `if [ -n "$CONTAINER_MOUNTS" ]`). Among a
    runner's options it is more of them, never the program they run. `words`: the words it may
    stand for; it compares as the Symbolic of the same text."""

    words: tuple[Scalar, ...] = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Symbolic) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


_UNKNOWN_REST = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\[@\]\}")


def unknown_rest(value: Scalar) -> bool:
    """An array element standing for an unknown number of them (`${NAME[@]}`: the rest of an
    array the branches disagree on, or after an element unset), past which indices are unknown."""
    return isinstance(value, Symbolic) and _UNKNOWN_REST.fullmatch(value.text) is not None


def segments(value: Scalar) -> tuple[tuple[str, bool], ...]:
    """(text, unknown) pieces of a value: a Partial's own, a plain Symbolic as one unknown piece."""
    if isinstance(value, Partial):
        return value.segments
    if isinstance(value, Symbolic):
        return ((value.text, True),)
    return ((str(value), False),)


def concat(values: list[Scalar], separator: str = "") -> str | Symbolic:
    """Values joined as bash joins text; a Partial (known pieces kept) when any part is unknown."""
    pieces: list[tuple[str, bool]] = []
    for k, value in enumerate(values):
        if k and separator:
            pieces.append((separator, False))
        pieces.extend(segments(value))
    merged: list[tuple[str, bool]] = []
    for text, unknown in pieces:
        if merged and merged[-1][1] == unknown:
            merged[-1] = (merged[-1][0] + text, unknown)
        elif text or unknown:
            merged.append((text, unknown))
    joined = "".join(t for t, _ in merged)
    if not any(u for _, u in merged):
        return joined
    return Partial(joined, tuple(merged))


@dataclass
class Var:
    value: str | Symbolic | list[tuple[Scalar, int]]  # a list for bash arrays: (element, line)
    line: int
    exported: bool
    fallbacks: tuple[str, ...] = ()  # unset variables whose `${NAME:-x}` fallback made the value
    starts: int = 0  # the line its text begins on, where below `line` (a `$(cat <<EOF` document)


@dataclass
class Field:
    """One word after expansion, and the line the user should look at for it."""

    value: str | Symbolic
    line: int
    unsplit: bool = False  # holds an unquoted expansion that could not be resolved
    fallbacks: tuple[str, ...] = ()  # unset variables whose `${NAME:-x}` fallback made the word


class FieldBuilder:
    """Bash word splitting: unquoted expansion results split on blanks, everything else joins."""

    def __init__(self) -> None:
        self.fields: list[Field] = []
        self._segments: list[tuple[str, bool]] | None = None
        self._line = 0
        self._unsplit = False
        self._whole: Symbolic | None = None  # a value that is the whole field, kept as it is (OptionWords)

    def _open(self, line: int) -> list[tuple[str, bool]]:
        """The segments of the field under way, starting one at `line` if none is."""
        if self._segments is None:
            self._segments, self._line = [], line
        return self._segments

    def text(self, value: str, line: int) -> None:
        self._open(line).append((value, False))

    def symbolic(self, value: str, line: int, unsplit: bool, whole: Symbolic | None = None) -> None:
        """`whole`: the value itself, kept where it is all of its field (`"${ARR[@]}"`'s `OptionWords`)."""
        first = self._segments is None or not "".join(t for t, _ in self._segments)
        self.text("", line)
        self._open(line).append((value, True))
        self._unsplit |= unsplit
        self._whole = whole if first else None

    def split(self, value: str, line: int) -> None:
        """`line`: where `value` starts; a word after a newline in it (a multi-line OPTS="...")
        is on a later line, and the user should be pointed there."""
        for k, piece in enumerate(re.split(r"([ \t\n]+)", value)):  # words and blanks, in turn
            if k % 2:
                self.end()
                line += piece.count("\n")
            elif piece:
                self.text(piece, line)

    def end(self) -> None:
        if self._segments is not None:
            value = concat([Symbolic(t) if unknown else t for t, unknown in self._segments])
            if self._whole is not None and str(value) == self._whole.text:
                value = self._whole
            self.fields.append(Field(value, self._line, self._unsplit))
        self._segments, self._unsplit, self._whole = None, False, None



def join(values: list) -> str | Symbolic:
    """Several values (or (value, line) pairs) as one: joined by spaces, known pieces kept."""
    return concat([v[0] if isinstance(v, tuple) else v for v in values], " ")


def integer_arithmetic(expression: str) -> int | None:
    """Bash `$(( ))` on integers: + - * / % ** and parentheses; None for anything else."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None

    def value(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = value(node.operand)
            return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
        if isinstance(node, ast.BinOp):
            a, b = value(node.left), value(node.right)
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b != 0:
                quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # truncates, as bash
                return a - b * quotient if isinstance(node.op, ast.Mod) else quotient
            if isinstance(node.op, ast.Pow) and 0 <= b <= 64 and abs(a) <= 2**32:
                return a**b
        return None

    try:
        return value(tree.body)
    except RecursionError:
        return None
