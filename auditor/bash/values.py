"""What a walk over a script holds: variables, expanded words (fields) and bash's word splitting,
joining and integer arithmetic over them."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from auditor.config.model import Scalar, Symbolic


@dataclass
class Var:
    value: str | Symbolic | list[tuple[Scalar, int]]  # a list for bash arrays: (element, line)
    line: int
    exported: bool


@dataclass
class Field:
    """One word after expansion, and the line the user should look at for it."""

    value: Scalar
    line: int
    unsplit: bool = False  # holds an unquoted expansion that could not be resolved


class FieldBuilder:
    """Bash word splitting: unquoted expansion results split on blanks, everything else joins."""

    def __init__(self) -> None:
        self.fields: list[Field] = []
        self._segments: list[tuple[str, bool]] | None = None
        self._line = 0
        self._unsplit = False

    def text(self, value: str, line: int) -> None:
        if self._segments is None:
            self._segments, self._line = [], line
        self._segments.append((value, False))

    def symbolic(self, value: str, line: int, unsplit: bool) -> None:
        self.text("", line)
        self._segments.append((value, True))
        self._unsplit |= unsplit

    def split(self, value: str, line: int) -> None:
        for k, piece in enumerate(re.split(r"[ \t\n]+", value)):
            if k:
                self.end()
            if piece:
                self.text(piece, line)

    def end(self) -> None:
        if self._segments is not None:
            joined = "".join(t for t, _ in self._segments)
            symbolic = any(s for _, s in self._segments)
            self.fields.append(Field(Symbolic(joined) if symbolic else joined, self._line, self._unsplit))
        self._segments, self._unsplit = None, False



def join(values: list) -> str | Symbolic:
    """Several values as one: the text joined by spaces, symbolic if any part is."""
    texts = [str(v[0] if isinstance(v, tuple) else v) for v in values]
    symbolic = any(isinstance(v[0] if isinstance(v, tuple) else v, Symbolic) for v in values)
    return Symbolic(" ".join(texts)) if symbolic else " ".join(texts)


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
