"""Bash tokens: words (with their quoted and expanded parts) and operators, plus the comments."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from auditor.errors import InputError

MAX_NESTING = 100  # compound commands, `bash -c` and `${...}` nesting; beyond it the text is refused

_OPERATORS = sorted(
    [";;&", ";;", ";&", "&&", "||", "|&", "&>>", "&>", ">>", "<<<", "<<-", "<<", ">&", "<&",
     ">|", "<>", ";", "&", "|", "(", ")", ">", "<"],
    key=len, reverse=True,
)
REDIRECTS = {">>", "<<<", "<<-", "<<", ">&", "<&", ">|", "<>", ">", "<", "&>", "&>>"}
_META = frozenset(" \t\n;&|()<>")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")


@dataclass
class Part:
    kind: str  # "lit" | "param" (text = inside of ${...} or the name) | "cmd" | "arith" | "array"
    text: str
    quoted: bool
    line: int
    src: str = ""  # the expansion as written, for Symbolic values
    elements: list[Word] = field(default_factory=list)  # kind "array"


@dataclass
class Word:
    parts: list[Part]
    line: int
    end_line: int
    raw: str
    heredoc: Heredoc | None = None  # a `<<` delimiter: the document it ends


@dataclass
class Heredoc:
    body: str
    line: int  # of its first line
    expands: bool  # an unquoted delimiter: `$X` and `$(...)` in the body are expanded


@dataclass
class Operator:
    text: str
    line: int
    fd: str = ""  # the file descriptor written before a redirection (`2>`, `{NAME}>`), if any


Token = Word | Operator


class Lexer:
    """Bash tokens: words (with their quoted and expanded parts) and operators."""

    def __init__(self, text: str, path: str, line_base: int = 0) -> None:
        self.s = text
        self.path = path
        self.line_base = line_base
        self._newlines = [i for i, c in enumerate(text) if c == "\n"]
        self.comments: list[tuple[int, str]] = []  # (line, text from `#`), outside words and arrays

    def line(self, i: int) -> int:
        return bisect.bisect_left(self._newlines, i) + 1 + self.line_base

    def _fail(self, what: str, i: int) -> InputError:
        return InputError(self.path, what, self.line(i))

    def tokens(self) -> list[Token]:
        s, n, i = self.s, len(self.s), 0
        out: list[Token] = []
        heredocs: list[tuple[str, bool, Word]] = []
        want_delimiter: bool | None = None  # strip-tabs flag after `<<` / `<<-`
        while i < n:
            c = s[i]
            if c in " \t":
                i += 1
            elif c == "\\" and s.startswith("\n", i + 1):
                i += 2
            elif c == "\n":
                out.append(Operator("\n", self.line(i)))
                i += 1
                for delimiter, strip, word in heredocs:
                    start = i
                    i, body_end = self._skip_heredoc(i, delimiter, strip)
                    lines = self.s[start:body_end].split("\n")[:-1]
                    body = "".join(f"{b.lstrip(chr(9)) if strip else b}\n" for b in lines)
                    word.heredoc = Heredoc(body, self.line(start), not re.search(r"[\"'\\]", word.raw))
                heredocs.clear()
            elif c == "#":
                end = s.find("\n", i)
                end = n if end < 0 else end
                self.comments.append((self.line(i), s[i:end]))
                i = end
            else:
                # `2>`; `{NAME}>FILE`: bash(1) REDIRECTION, "{varname}": bash opens a descriptor
                # and assigns its number to NAME (`exec {lock_fd}>"/tmp/npu$npu"`), no command word
                fd = re.match(r"(?:[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\})(?=[<>])", s[i:i + 72])
                start = i + (fd.end() if fd else 0)
                op = next((o for o in _OPERATORS if s.startswith(o, start)), None)
                if op is not None:
                    out.append(Operator(op, self.line(i), fd.group(0) if fd else ""))
                    i = start + len(op)
                    if op in ("<<", "<<-"):
                        want_delimiter = op == "<<-"
                    continue
                parts, j = self._scan(i, _META, quoted=False)
                word = Word(parts, self.line(i), self.line(max(i, j - 1)), s[i:j])
                out.append(word)
                if want_delimiter is not None:
                    delimiter = re.sub(r"[\"'\\]", "", word.raw)
                    heredocs.append((delimiter, want_delimiter, word))
                    want_delimiter = None
                i = j
        return out

    def _skip_heredoc(self, i: int, delimiter: str, strip: bool) -> tuple[int, int]:
        """(where the text after the document starts, where its delimiter line starts)."""
        s = self.s
        while i < len(s):
            end = s.find("\n", i)
            end = len(s) if end < 0 else end
            line = s[i:end].lstrip("\t") if strip else s[i:end]
            if line == delimiter:
                return min(end + 1, len(s)), i
            i = end + 1
        return len(s), len(s)

    def fragment(self, text: str, line: int) -> list[Part]:
        """The parts of a word inside an expansion (`${X:-default word}`), with no splitting."""
        sub = Lexer(text, self.path, line - 1)
        parts, _ = sub._scan(0, frozenset(), quoted=False)
        return parts

    def _scan(self, i: int, stop: frozenset[str], quoted: bool) -> tuple[list[Part], int]:
        """Scan one word (or the inside of double quotes when `quoted`) from i."""
        s, n = self.s, len(self.s)
        parts: list[Part] = []
        buf: list[str] = []
        start = buf_start = i

        def flush(q: bool = quoted) -> None:
            if buf:
                parts.append(Part("lit", "".join(buf), q, self.line(buf_start)))
                buf.clear()

        def keep(text: str, at: int) -> None:
            nonlocal buf_start
            if not buf:
                buf_start = at
            buf.append(text)

        while i < n:
            c = s[i]
            if quoted and c == '"':
                break
            if not quoted and c in stop:
                if c == "(" and ASSIGN.fullmatch(s[start:i]) and stop is _META:
                    flush()
                    elements, i = self._array(i)
                    parts.append(Part("array", "", False, self.line(i), elements=elements))
                    continue
                break
            if c == "\\":
                nxt = s[i + 1] if i + 1 < n else ""
                if nxt == "\n":
                    i += 2
                elif quoted and nxt not in '$`"\\':
                    keep("\\", i)
                    i += 1
                else:
                    keep(nxt or "\\", i)
                    i += 2 if nxt else 1
            elif c == "'" and not quoted:
                end = s.find("'", i + 1)
                if end < 0:
                    raise self._fail("unterminated single quote", i)
                flush()
                parts.append(Part("lit", s[i + 1:end], True, self.line(i)))
                i = end + 1
            elif c == "$" and s.startswith("$'", i) and not quoted:
                flush()
                text, i = self._ansi_c(i)
                parts.append(Part("lit", text, True, self.line(i)))
            elif c == '"' or (c == "$" and s.startswith('$"', i) and not quoted):
                flush()
                opening = i
                i += 2 if c == "$" else 1
                inner, i = self._scan(i, stop, quoted=True)
                if i >= n:
                    raise self._fail("unterminated double quote", opening)
                parts.extend(inner or [Part("lit", "", True, self.line(opening))])
                i += 1
            elif c == "`":
                end = i + 1
                while end < n and s[end] != "`":
                    end += 2 if s[end] == "\\" else 1
                if end >= n:
                    raise self._fail("unterminated backquote", i)
                flush()
                parts.append(Part("cmd", s[i + 1:end], quoted, self.line(i), s[i:end + 1]))
                i = end + 1
            elif c == "$" and i + 1 < n:
                flush()
                part, i = self._dollar(i, quoted)
                parts.append(part)
            else:
                keep(c, i)
                i += 1
        flush()
        return parts, i

    def _dollar(self, i: int, quoted: bool) -> tuple[Part, int]:
        s, line = self.s, self.line(i)
        if s.startswith("${", i):
            end = self._match(i + 2, "{", "}")
            if end < 0:
                raise self._fail("unterminated ${", i)
            return Part("param", s[i + 2:end], quoted, line, s[i:end + 1]), end + 1
        if s.startswith("$(", i):
            if s.startswith("$((", i):  # `<<` is a shift and `#` a base there, not a script's
                end = self._match(i + 2, "(", ")")
                if end >= 0 and s[end - 1] == ")" and self._match(i + 3, "(", ")") == end - 1:
                    return Part("arith", s[i + 3:end - 1], quoted, line, s[i:end + 1]), end + 1
            end = self._match(i + 2, "(", ")", script=True)
            if end < 0:
                raise self._fail("unterminated $(", i)
            return Part("cmd", s[i + 2:end], quoted, line, s[i:end + 1]), end + 1
        name = NAME.match(s, i + 1)
        if name:
            return Part("param", name.group(0), quoted, line, s[i:name.end()]), name.end()
        if s[i + 1] in "0123456789@*#?$!-":
            return Part("param", s[i + 1], quoted, line, s[i:i + 2]), i + 2
        return Part("lit", "$", quoted, line), i + 1

    def _match(self, i: int, open_: str, close: str, script: bool = False) -> int:
        """Index of the `close` that ends a group opened just before i, skipping quotes; -1 if none.
        `script`: the group is a command substitution, whose comments and here-documents bash
        reads as a script's (`head_cmd=$(cat <<EOF` ... `EOF` `)`: a lone `'` there is text)."""
        s, n, depth = self.s, len(self.s), 1
        documents: list[tuple[str, bool]] = []  # (delimiter, strip tabs) of the `<<` on this line
        while i < n:
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if script and c == "#" and (i == 0 or s[i - 1] in " \t\n;|&("):
                end = s.find("\n", i)
                i = n if end < 0 else end
                continue
            if script and s.startswith("<<", i) and not s.startswith("<<<", i):
                heredoc = re.match(r"<<(-?)[ \t]*([\"']?)([^\s;&|()<>\"']+)\2", s[i:])
                if heredoc:
                    documents.append((heredoc.group(3), heredoc.group(1) == "-"))
                    i += heredoc.end()
                    continue
            if script and c == "\n" and documents:
                i += 1
                for delimiter, strip in documents:
                    i = self._skip_heredoc(i, delimiter, strip)[0]
                documents.clear()
                continue
            if c == "'" and open_ == "(":
                end = s.find("'", i + 1)
                if end < 0:
                    return -1
                i = end + 1
                continue
            if c == '"':
                i += 1
                while i < n and s[i] != '"':
                    i += 2 if s[i] == "\\" else 1
                if i >= n:
                    return -1
            elif c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        return -1

    def _ansi_c(self, i: int) -> tuple[str, int]:
        s, n = self.s, len(self.s)
        escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b",
                   "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
        out: list[str] = []
        j = i + 2
        while j < n and s[j] != "'":
            if s[j] == "\\" and j + 1 < n:
                out.append(escapes.get(s[j + 1], "\\" + s[j + 1]))
                j += 2
            else:
                out.append(s[j])
                j += 1
        if j >= n:
            raise self._fail("unterminated $'...' quote", i)
        return "".join(out), j + 1

    def _array(self, i: int) -> tuple[list[Word], int]:
        """`NAME=( a b # comment\\n c )` from the `(` at i; returns the elements and the index after `)`."""
        s, n = self.s, len(self.s)
        opening, i = i, i + 1
        elements: list[Word] = []
        while True:
            while i < n and (s[i] in " \t\n" or s.startswith("\\\n", i)):
                i += 2 if s[i] == "\\" else 1
            if i >= n:
                raise self._fail("unterminated array (", opening)
            if s[i] == ")":
                return elements, i + 1
            if s[i] == "#":
                end = s.find("\n", i)
                i = n if end < 0 else end
                continue
            parts, j = self._scan(i, _META, quoted=False)
            if j == i:  # an operator character inside the array: bash refuses it
                raise self._fail(f"unexpected `{s[i]}` inside array (", i)
            elements.append(Word(parts, self.line(i), self.line(j - 1), s[i:j]))
            i = j
