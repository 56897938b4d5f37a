"""One module's source text as the stdlib `ast` positions it: the code of a node, for site texts,
guards and arguments shown in reports.

`ast` gives lines and UTF-8 byte columns for every node, so a node's code is a slice of the
encoded source; `ast.get_source_segment` would split the whole file again on every call.
"""

from __future__ import annotations

import ast
import warnings


def parse(text: str) -> ast.Module:
    """The module's tree. The target's code is read, never run: its invalid escape sequences
    and other compile-time warnings are its own, not the audit's, so none reaches stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


class Source:
    def __init__(self, text: str) -> None:
        self.raw = text.encode("utf-8")
        self.starts = [0]  # byte offset of each line; lines end as the tokenizer ends them
        for line in self.raw.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def segment(self, node: ast.AST) -> str:
        """The code of an expression or statement, as written (without enclosing parentheses,
        except a tuple's own)."""
        start, end = self.offsets(node)
        return self.raw[start:end].decode("utf-8", errors="replace")

    def offsets(self, node: ast.AST) -> tuple[int, int]:
        """Byte offsets of a node's start and end in the source."""
        return (self.starts[node.lineno - 1] + node.col_offset,  # type: ignore[attr-defined]
                self.starts[node.end_lineno - 1] + node.end_col_offset)  # type: ignore[attr-defined]

    def grouped(self, node: ast.expr, after: int) -> str:
        """The code of a statement's test or iterable with the parentheses around it
        (`if (a and b):`); `after` is where the code before it starts (the statement's keyword,
        a loop's target): from there to the node are only keywords, spaces, comments and the
        opening parentheses, and after the node only spaces, comments and the closing ones."""
        start, end = self.offsets(node)
        before = b"\n".join(line.partition(b"#")[0] for line in self.raw[after:start].split(b"\n"))
        opened = before.count(b"(")
        if opened == 0:
            return self.raw[start:end].decode("utf-8", errors="replace")
        first = after + self.raw[after:start].index(b"(")
        while opened and end < len(self.raw):
            char = self.raw[end:end + 1]
            if char == b"#":
                end = self.raw.find(b"\n", end)
                end = len(self.raw) if end < 0 else end
                continue
            if char == b")":
                opened -= 1
            end += 1
        return self.raw[first:end].decode("utf-8", errors="replace")

    def concatenated(self, node: ast.Constant) -> bool:
        """Whether a string constant is written as several literals (`"a" "b"`), which `ast`
        joins: the IR and table keys read only a single literal as a constant (as before the
        move to `ast`, so cached and shown results stay the same)."""
        code = self.segment(node)
        body = code.lstrip("rRuUbBfF")
        quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
        i = len(quote)
        while True:
            j = body.find(quote, i)
            if j < 0:
                return True
            backslashes = len(body[i:j]) - len(body[i:j].rstrip("\\"))
            if backslashes % 2 == 0:
                return j + len(quote) != len(body)
            i = j + 1

    def index(self, node: ast.Subscript) -> ast.expr | None:
        """The one index of a subscript, None for a slice or several (`x[a, b]`); `x[a,]` and
        `x[(a, b)]` have one."""
        index = node.slice
        if isinstance(index, ast.Slice):
            return None
        if isinstance(index, ast.Tuple) and not self.segment(index).startswith("("):
            return index.elts[0] if len(index.elts) == 1 and \
                not isinstance(index.elts[0], (ast.Slice, ast.Starred)) else None
        return index
