"""One module's source text as the stdlib `ast` positions it: the code of a node, for site texts,
guards and arguments shown in reports.

`ast` gives lines and UTF-8 byte columns for every node, so a node's code is a slice of the
encoded source; `ast.get_source_segment` would split the whole file again on every call.
"""

from __future__ import annotations

import ast


class Source:
    def __init__(self, text: str) -> None:
        self.raw = text.encode("utf-8")
        self.starts = [0]  # byte offset of each line; lines end as the tokenizer ends them
        for line in self.raw.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def segment(self, node: ast.AST) -> str:
        """The code of an expression or statement, as written (without enclosing parentheses,
        except a tuple's own)."""
        start = self.starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return self.raw[start:end].decode("utf-8", errors="replace")

    def concatenated(self, node: ast.Constant) -> bool:
        """Whether a string constant is written as several literals (`"a" "b"`): only a single
        literal is read as a constant, as libcst's `SimpleString` was."""
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

    def wrapped(self, node: ast.AST) -> bool:
        """A tuple written in parentheses (`x[(a, b)]` is one index, `x[a, b]` two)."""
        code = self.segment(node)
        return code.startswith("(") and code.endswith(")")
