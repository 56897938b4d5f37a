"""Reads bash the way bash reads it, without running anything: lexing, parsing, and a walk over
the script that keeps variables and expands words.

Quotes, `\\` continuations, `${VAR:-default}`, arrays, word splitting of unquoted expansions,
here-documents and if/for/case blocks are all modelled, because a flag hidden in
`${EXTRA_ARGS[@]}` or a value quoted the wrong way is exactly what an infra engineer needs to
see. What cannot be known statically (`$(hostname)`, `$1`, a variable the script inherits) stays
`Symbolic`. An unassigned variable is unknown; where the script gives it a fallback
(`${NNODES:-16}`, `[ -z "$NNODES" ] && NNODES=16`) the fallback is taken. Which external commands
matter is the caller's business: `Shell.external` is where a reader picks them out.
"""

from __future__ import annotations

import ast
import bisect
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from auditor.config.model import EnvVar, Scalar, Symbolic
from auditor.errors import InputError
from auditor.findings import Finding

MAX_NESTING = 100  # compound commands, `bash -c` and `${...}` nesting; beyond it the text is refused

_OPERATORS = sorted(
    [";;&", ";;", ";&", "&&", "||", "|&", "&>>", "&>", ">>", "<<<", "<<-", "<<", ">&", "<&",
     ">|", "<>", ";", "&", "|", "(", ")", ">", "<"],
    key=len, reverse=True,
)
_REDIRECTS = {">>", "<<<", "<<-", "<<", ">&", "<&", ">|", "<>", ">", "<", "&>", "&>>"}
_META = frozenset(" \t\n;&|()<>")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
_PARAM = re.compile(r"(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:\[([^\]]*)\])?(.*)", re.DOTALL)
_PARAM_OP = re.compile(r"(:?[-=+?])(.*)", re.DOTALL)
_KEYWORDS = {"if", "then", "elif", "else", "fi", "for", "select", "while", "until", "do", "done",
             "case", "esac", "in", "{", "}", "function", "[[", "!"}


# --- lexer ---------------------------------------------------------------------------------------


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


@dataclass
class Op:
    text: str
    line: int


_Token = Word | Op


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

    def tokens(self) -> list[_Token]:
        s, n, i = self.s, len(self.s), 0
        out: list[_Token] = []
        heredocs: list[tuple[str, bool]] = []
        want_delimiter: bool | None = None  # strip-tabs flag after `<<` / `<<-`
        while i < n:
            c = s[i]
            if c in " \t":
                i += 1
            elif c == "\\" and s.startswith("\n", i + 1):
                i += 2
            elif c == "\n":
                out.append(Op("\n", self.line(i)))
                i += 1
                for delimiter, strip in heredocs:
                    i = self._skip_heredoc(i, delimiter, strip)
                heredocs.clear()
            elif c == "#":
                end = s.find("\n", i)
                end = n if end < 0 else end
                self.comments.append((self.line(i), s[i:end]))
                i = end
            else:
                fd = re.match(r"[0-9]+(?=[<>])", s[i:i + 12])
                start = i + (fd.end() if fd else 0)
                op = next((o for o in _OPERATORS if s.startswith(o, start)), None)
                if op is not None:
                    out.append(Op(op, self.line(i)))
                    i = start + len(op)
                    if op in ("<<", "<<-"):
                        want_delimiter = op == "<<-"
                    continue
                parts, j = self._scan(i, _META, quoted=False)
                word = Word(parts, self.line(i), self.line(max(i, j - 1)), s[i:j])
                out.append(word)
                if want_delimiter is not None:
                    delimiter = re.sub(r"[\"'\\]", "", word.raw)
                    heredocs.append((delimiter, want_delimiter))
                    want_delimiter = None
                i = j
        return out

    def _skip_heredoc(self, i: int, delimiter: str, strip: bool) -> int:
        s = self.s
        while i < len(s):
            end = s.find("\n", i)
            end = len(s) if end < 0 else end
            line = s[i:end].lstrip("\t") if strip else s[i:end]
            i = end + 1
            if line == delimiter:
                break
        return min(i, len(s))

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
            end = self._match(i + 2, "(", ")")
            if end < 0:
                raise self._fail("unterminated $(", i)
            if s.startswith("$((", i) and s[end - 1] == ")" and self._match(i + 3, "(", ")") == end - 1:
                return Part("arith", s[i + 3:end - 1], quoted, line, s[i:end + 1]), end + 1
            return Part("cmd", s[i + 2:end], quoted, line, s[i:end + 1]), end + 1
        name = NAME.match(s, i + 1)
        if name:
            return Part("param", name.group(0), quoted, line, s[i:name.end()]), name.end()
        if s[i + 1] in "0123456789@*#?$!-":
            return Part("param", s[i + 1], quoted, line, s[i:i + 2]), i + 2
        return Part("lit", "$", quoted, line), i + 1

    def _match(self, i: int, open_: str, close: str) -> int:
        """Index of the `close` that ends a group opened just before i, skipping quotes; -1 if none."""
        s, n, depth = self.s, len(self.s), 1
        while i < n:
            c = s[i]
            if c == "\\":
                i += 2
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


# --- parser --------------------------------------------------------------------------------------


@dataclass
class Cmd:
    words: list[Word]
    line: int
    end_line: int


@dataclass
class _Branches:
    """if/elif/else, case: exactly one branch runs (`exhaustive` when one surely does)."""

    line: int
    conditions: list[list[Node]]
    bodies: list[list[Node]]
    exhaustive: bool


@dataclass
class _Loop:
    line: int
    var: str | None
    condition: list[Node]
    body: list[Node]


@dataclass
class _Group:
    body: list[Node]
    subshell: bool


@dataclass
class _AndOr:
    first: Node
    rest: list[tuple[str, Node]]


@dataclass
class _Pipeline:
    commands: list[Node]


@dataclass
class _Function:
    name: str
    body: Node


Node = Cmd | _Branches | _Loop | _Group | _AndOr | _Pipeline | _Function


class Parser:
    """Bash grammar, best effort: a syntax error becomes a diagnostic and parsing goes on."""

    def __init__(self, tokens: list[_Token], path: str, diagnostics: list[Finding]) -> None:
        self.t = tokens
        self.p = 0
        self.path = path
        self.diagnostics = diagnostics
        self.depth = 0

    def parse(self) -> list[Node]:
        return self._list(frozenset())

    def _peek(self, k: int = 0) -> _Token | None:
        return self.t[self.p + k] if self.p + k < len(self.t) else None

    def _is_kw(self, tok: _Token | None, words: frozenset[str] | set[str]) -> bool:
        return isinstance(tok, Word) and tok.raw in words and tok.raw in _KEYWORDS

    def _syntax(self, line: int, what: str) -> None:
        self.diagnostics.append(Finding(
            "launch.syntax", "warning", f"bash syntax error: {what}; bash stops here, read on as best as possible",
            fix="run `bash -n` on the script", where=f"{self.path}:{line}"))

    def _expect(self, word: str, line: int) -> None:
        if self._is_kw(self._peek(), {word}):
            self.p += 1
        else:
            self._syntax(line, f"`{word}` expected")

    def _skip_newlines(self) -> None:
        while isinstance(self._peek(), Op) and self._peek().text in ("\n", ";"):
            self.p += 1

    def _list(self, terms: frozenset[str]) -> list[Node]:
        items: list[Node] = []
        while (tok := self._peek()) is not None:
            if isinstance(tok, Op):
                if tok.text in ("\n", ";", "&"):
                    self.p += 1
                elif tok.text in terms:
                    break
                elif tok.text == "(":
                    items.append(self._and_or())
                else:
                    self._syntax(tok.line, f"unexpected `{tok.text}`")
                    self.p += 1
            elif self._is_kw(tok, terms):
                break
            else:
                items.append(self._and_or())
        return items

    def _and_or(self) -> Node:
        first = self._pipeline()
        rest: list[tuple[str, Node]] = []
        while isinstance(op := self._peek(), Op) and op.text in ("&&", "||"):
            self.p += 1
            while isinstance(self._peek(), Op) and self._peek().text == "\n":
                self.p += 1
            rest.append((op.text, self._pipeline()))
        return _AndOr(first, rest) if rest else first

    def _pipeline(self) -> Node:
        if self._is_kw(self._peek(), {"!"}):
            self.p += 1
        commands = [self._command()]
        while isinstance(op := self._peek(), Op) and op.text in ("|", "|&"):
            self.p += 1
            while isinstance(self._peek(), Op) and self._peek().text == "\n":
                self.p += 1
            commands.append(self._command())
        return _Pipeline(commands) if len(commands) > 1 else commands[0]

    def _command(self) -> Node:
        tok = self._peek()
        compound = (isinstance(tok, Op) and tok.text == "(") or self._is_kw(
            tok, {"if", "for", "select", "while", "until", "case", "{", "function"})
        if not compound:
            if (isinstance(tok, Word) and isinstance(self._peek(1), Op) and self._peek(1).text == "("
                    and isinstance(self._peek(2), Op) and self._peek(2).text == ")"):
                self.p += 3
                self._skip_newlines()
                return self._nested(lambda: _Function(tok.raw, self._command()), tok.line)
            return self._simple()
        node = self._nested(lambda: self._compound(tok), tok.line)
        self._redirects()
        return node

    def _nested(self, build: Callable[[], Node], line: int) -> Node:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise InputError(self.path, f"commands nested more than {MAX_NESTING} levels deep", line)
        try:
            return build()
        finally:
            self.depth -= 1

    def _compound(self, tok: _Token) -> Node:
        line = tok.line
        if isinstance(tok, Op):  # ( subshell ) or (( arithmetic ))
            if isinstance(self._peek(1), Op) and self._peek(1).text == "(":
                self._skip_arithmetic()
                return Cmd([], line, line)
            self.p += 1
            body = self._list(frozenset({")"}))
            if isinstance(self._peek(), Op) and self._peek().text == ")":
                self.p += 1
            else:
                self._syntax(line, "`)` expected")
            return _Group(body, subshell=True)
        word = tok.raw
        self.p += 1
        if word == "if":
            conditions, bodies = [], []
            while True:
                conditions.append(self._list(frozenset({"then"})))
                self._expect("then", line)
                bodies.append(self._list(frozenset({"elif", "else", "fi"})))
                if self._is_kw(self._peek(), {"elif"}):
                    self.p += 1
                    continue
                break
            exhaustive = self._is_kw(self._peek(), {"else"})
            if exhaustive:
                self.p += 1
                conditions.append([])
                bodies.append(self._list(frozenset({"fi"})))
            self._expect("fi", line)
            return _Branches(line, conditions, bodies, exhaustive)
        if word in ("for", "select"):
            var = None
            if isinstance(self._peek(), Op) and self._peek().text == "(":
                self._skip_arithmetic()
            elif isinstance(self._peek(), Word):
                var = self._peek().raw
                self.p += 1
            self._skip_newlines()
            if self._is_kw(self._peek(), {"in"}):
                self.p += 1
                while isinstance(self._peek(), Word):
                    self.p += 1
            return self._loop_body(line, var, [])
        if word in ("while", "until"):
            return self._loop_body(line, None, self._list(frozenset({"do"})))
        if word == "case":
            if isinstance(self._peek(), Word):
                self.p += 1
            self._skip_newlines()
            self._expect("in", line)
            bodies = []
            catch_all = False
            while True:
                self._skip_newlines()
                tok = self._peek()
                if tok is None:
                    self._syntax(line, "`esac` expected")
                    break
                if self._is_kw(tok, {"esac"}):
                    self.p += 1
                    break
                while (tok := self._peek()) is not None and not (isinstance(tok, Op) and tok.text == ")"):
                    self.p += 1
                    catch_all |= isinstance(tok, Word) and tok.raw == "*"
                    if isinstance(tok, Op) and tok.text not in ("(", "|"):
                        break
                else:
                    if tok is not None:
                        self.p += 1
                bodies.append(self._list(frozenset({";;", ";&", ";;&", "esac"})))
                if isinstance(self._peek(), Op) and self._peek().text in (";;", ";&", ";;&"):
                    self.p += 1
            return _Branches(line, [[] for _ in bodies], bodies, exhaustive=catch_all)
        if word == "{":
            body = self._list(frozenset({"}"}))
            self._expect("}", line)
            return _Group(body, subshell=False)
        # function NAME [()] BODY
        name = self._peek().raw if isinstance(self._peek(), Word) else ""
        self.p += 1 if name else 0
        if isinstance(self._peek(), Op) and self._peek().text == "(":
            self.p += 2 if isinstance(self._peek(1), Op) and self._peek(1).text == ")" else 1
        self._skip_newlines()
        return _Function(name, self._command())

    def _loop_body(self, line: int, var: str | None, condition: list[Node]) -> _Loop:
        self._skip_newlines()
        self._expect("do", line)
        body = self._list(frozenset({"done"}))
        self._expect("done", line)
        return _Loop(line, var, condition, body)

    def _skip_arithmetic(self) -> None:
        depth = 0
        while (tok := self._peek()) is not None:
            self.p += 1
            if isinstance(tok, Op) and tok.text == "(":
                depth += 1
            elif isinstance(tok, Op) and tok.text == ")":
                depth -= 1
                if depth <= 0:
                    if isinstance(self._peek(), Op) and self._peek().text == ")":
                        self.p += 1
                    return

    def _redirects(self) -> None:
        while isinstance(op := self._peek(), Op) and op.text in _REDIRECTS:
            self.p += 1
            if isinstance(self._peek(), Word):
                self.p += 1

    def _simple(self) -> Cmd:
        tok = self._peek()
        words: list[Word] = []
        test = isinstance(tok, Word) and tok.raw == "[["
        while (tok := self._peek()) is not None:
            if isinstance(tok, Word):
                words.append(tok)
                self.p += 1
                if test and tok.raw == "]]":
                    test = False
            elif isinstance(tok, Op) and tok.text in _REDIRECTS and not test:
                self._redirects()
            elif test and tok.text != "\n":
                self.p += 1
            else:
                break
        line = words[0].line if words else (tok.line if tok else 0)
        return Cmd(words, line, max((w.end_line for w in words), default=line))


# --- shell state and expansion -------------------------------------------------------------------


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


class _FieldBuilder:
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


class Shell(ABC):
    """Walks a parsed script in order, keeping variables as bash would; builtins, assignments and
    functions are run here, every other command goes to `external`."""

    def __init__(self, path: str, environ: dict[str, str], diagnostics: list[Finding]) -> None:
        self.path = path
        self.environ = environ  # what the script inherits from its caller
        self.diagnostics = diagnostics
        self.vars: dict[str, Var] = {}
        self.referenced: set[str] = set()  # variables the script reads
        self.functions: dict[str, Node] = {}
        self.conditional = 0  # how many if/case/loop bodies the walk is inside
        self.depth = 0
        self._lexer = Lexer("", path)

    @abstractmethod
    def external(self, fields: list[Field], inline: dict[str, EnvVar], cmd: Cmd,
                 siblings: list[Node], at: int) -> int:
        """A program the script runs (`fields` expanded, `inline` its `VAR=x` prefix); it leaves
        the shell's variables alone. `cmd` is `siblings[at]`; returns how many of the commands
        after it the reader takes as part of it (0 for a command inside a pipeline or `&&`)."""

    # -- walking

    def run(self, nodes: list[Node]) -> None:
        k = 0
        while k < len(nodes):
            node = nodes[k]
            if isinstance(node, Cmd):
                k += self._command(node, nodes, k)
            else:
                self._node(node)
            k += 1

    def _node(self, node: Node) -> None:
        if isinstance(node, Cmd):
            self._command(node, [node], 0)
        elif isinstance(node, _AndOr):
            self._node(node.first)
            for op, right in node.rest:
                default_for = _tested_empty(node.first) if op == "&&" else _tested_set(node.first)
                self._branches([[right]], exhaustive=False, default_for=default_for, block=False)
        elif isinstance(node, _Pipeline):
            for command in node.commands:
                saved = dict(self.vars)
                self._node(command)
                self.vars = saved
        elif isinstance(node, _Branches):
            bodies = [cond + body for cond, body in zip(node.conditions, node.bodies)]
            self._branches(bodies, node.exhaustive)
        elif isinstance(node, _Loop):
            if node.var:
                self.vars[node.var] = Var(Symbolic(f"${node.var}"), node.line, False)
            self.run(node.condition)
            self._branches([node.body], exhaustive=False)
        elif isinstance(node, _Group):
            saved = dict(self.vars)
            self.run(node.body)
            if node.subshell:
                self.vars = saved
        elif isinstance(node, _Function):
            self.functions[node.name] = node.body

    def _branches(self, bodies: list[list[Node]], exhaustive: bool, default_for: str | None = None,
                  block: bool = True) -> None:
        """Run each branch from the same state; a variable the branches disagree on becomes symbolic.

        `block`: an if/case/loop body (counted in `conditional`), not the right side of
        `cd dir && torchrun ...`.
        """
        before = dict(self.vars)
        ends = []
        self.conditional += block
        try:
            for body in bodies:
                self.vars = dict(before)
                self.run(body)
                ends.append(self.vars)
        finally:
            self.conditional -= block
        if not exhaustive:
            ends.append(before)
        merged: dict[str, Var] = {}
        for name in set().union(*ends):
            seen = [end.get(name) for end in ends]
            if name == default_for and before.get(name) is None:
                seen = [v for v in seen if v is not None]
            first = seen[0]
            if all(v is not None and first is not None and v.value == first.value for v in seen):
                merged[name] = Var(first.value, max(v.line for v in seen), any(v.exported for v in seen))
            else:
                known = [v for v in seen if v is not None]
                merged[name] = Var(Symbolic(f"${{{name}}}"), max(v.line for v in known),
                                    any(v.exported for v in known))
        self.vars = merged

    def _command(self, cmd: Cmd, siblings: list[Node], at: int) -> int:
        """Run one simple command; how many following siblings it took (see `external`)."""
        words = cmd.words
        if not words or words[0].raw == "[[":
            return 0
        k = 0
        while k < len(words) and ASSIGN.match(words[k].raw) and words[k].parts[0].kind == "lit":
            k += 1
        fields = [f for w in words[k:] for f in self.expand(w)]
        if not fields:
            for w in words[:k]:
                self.assign(w, exported=False)
            return 0
        inline = {}
        for w in words[:k]:
            name, value = self.assignment_value(w)
            inline[name] = EnvVar(name, value if not isinstance(value, list) else join(value), w.line, "inline")
        head = fields[0].value
        if head in ("export", "declare", "typeset", "local", "readonly"):
            self._declare(head, words[k + 1:])
            return 0
        if head == "unset":
            for f in fields[1:]:
                self.vars.pop(str(f.value), None)
            return 0
        if head in ("source", ".") and len(fields) > 1:
            self.diagnostics.append(Finding(
                "launch.unread-file", "info",
                f"`{head} {fields[1].value}` is not followed: variables it sets are unknown here",
                where=f"{self.path}:{cmd.line}"))
            return 0
        if isinstance(head, str) and head in self.functions and self.depth < MAX_NESTING:
            self.depth += 1
            try:
                self._node(self.functions[head])
            finally:
                self.depth -= 1
            return 0
        return self.external(fields, inline, cmd, siblings, at)

    def _declare(self, builtin: str, words: list[Word]) -> None:
        options = "".join(w.raw[1:] for w in words if w.raw.startswith("-"))
        exported = builtin == "export" or "x" in options
        for w in words:
            if w.raw.startswith("-"):
                continue
            if ASSIGN.match(w.raw) and w.parts[0].kind == "lit":
                self.assign(w, exported=exported)
            elif NAME.fullmatch(w.raw) and exported:
                current = self.vars.get(w.raw)
                if current is not None:
                    self.vars[w.raw] = Var(current.value, current.line, True)
                elif w.raw in self.environ:
                    self.vars[w.raw] = Var(self.environ[w.raw], w.line, True)

    def assignment_value(self, word: Word) -> tuple[str, str | Symbolic | list[tuple[Scalar, int]]]:
        m = ASSIGN.match(word.raw)
        name, index, append = m.group(1), m.group(2), m.group(3)
        first = word.parts[0]
        rest = [Part("lit", first.text[len(m.group(0)):], first.quoted, first.line)] + word.parts[1:]
        if any(p.kind == "array" for p in rest):
            elements = [(f.value, f.line) for p in rest if p.kind == "array"
                        for w in p.elements for f in self.expand(w)]
            current = self.vars.get(name)
            if append and current is not None and isinstance(current.value, list):
                elements = current.value + elements
            return name, elements
        value = self._join_parts(rest, word.line)
        current = self.vars.get(name)
        if index is not None:
            return name, Symbolic(word.raw) if current is None else current.value
        if append and current is not None:
            if isinstance(current.value, list):
                return name, current.value + [(value, word.line)]
            if isinstance(current.value, str) and isinstance(value, str):
                return name, current.value + value
            return name, Symbolic(f"{current.value}{value}")
        return name, value

    def assign(self, word: Word, exported: bool) -> None:
        name, value = self.assignment_value(word)
        current = self.vars.get(name)
        inherited = current.exported if current else name in self.environ
        self.vars[name] = Var(value, word.line, exported or inherited)

    # -- expansion

    def expand(self, word: Word) -> list[Field]:
        builder = _FieldBuilder()
        self._expand_parts(word.parts, builder, word.line)
        builder.end()
        return builder.fields

    def _join_parts(self, parts: list[Part], line: int) -> str | Symbolic:
        """Expansion without word splitting, as in an assignment's value."""
        builder = _FieldBuilder()
        quoted = [Part(p.kind, p.text, True, p.line, p.src, p.elements) for p in parts]
        builder.text("", line)
        self._expand_parts(quoted, builder, line)
        builder.end()
        values = [f.value for f in builder.fields]
        return join(values) if len(values) != 1 else values[0]

    def _expand_parts(self, parts: list[Part], out: _FieldBuilder, line: int) -> None:
        for part in parts:
            if part.kind == "lit":
                out.text(part.text, part.line)
            elif part.kind == "cmd":
                out.symbolic(part.src, part.line, unsplit=not part.quoted)
            elif part.kind == "arith":
                value = self._arith(part)
                if isinstance(value, str):
                    out.text(value, part.line)
                else:
                    out.symbolic(part.src, part.line, unsplit=False)
            elif part.kind == "array":  # `A=(...)` outside an assignment: bash refuses it
                out.text(f"({' '.join(w.raw for w in part.elements)})", part.line)
            else:
                self._expand_param(part, out)

    def _expand_param(self, part: Part, out: _FieldBuilder) -> None:
        value, line = self._param(part)
        if isinstance(value, list):
            at = part.quoted and "[*]" not in part.src
            for k, (element, element_line) in enumerate(value):
                if k and (at or not part.quoted):
                    out.end()
                elif k:
                    out.text(" ", element_line)
                self._emit(element, element_line, part.quoted, out)
            return
        self._emit(value, line, part.quoted, out)

    @staticmethod
    def _emit(value: Scalar, line: int, quoted: bool, out: _FieldBuilder) -> None:
        if isinstance(value, Symbolic):
            out.symbolic(value.text, line, unsplit=not quoted)
        elif quoted:
            out.text(str(value), line)
        else:
            out.split(str(value), line)

    def _param(self, part: Part) -> tuple[Scalar | list[tuple[Scalar, int]], int]:
        """The value of one `$NAME` / `${...}` expansion and the line it was assigned on."""
        unknown = Symbolic(part.src), part.line
        m = _PARAM.fullmatch(part.text)
        if not m or not (NAME.fullmatch(m.group(2)) or m.group(2).isdigit()) or self.depth >= MAX_NESTING:
            return unknown
        length, name, index, rest = m.groups()
        self.referenced.add(name)
        var = self.vars.get(name)
        if var is None and name in self.environ:
            var = Var(self.environ[name], 0, True)
        value: Scalar | list[tuple[Scalar, int]] | None = None
        line = var.line if var else part.line
        if var is not None:
            value = var.value
            if isinstance(value, list):
                if index in ("@", "*"):
                    if length:
                        return str(len(value)), line
                    return (value, line) if not rest else unknown
                position = int(index) if index and index.isdigit() else 0 if index is None else None
                if position is None:
                    return unknown
                value, line = value[position] if position < len(value) else ("", line)
            elif index not in (None, "0", "@", "*"):
                value = ""
        if length:
            return (str(len(value)), line) if isinstance(value, str) else unknown
        if not rest:
            return (value, line) if value is not None else unknown
        op_match = _PARAM_OP.fullmatch(rest)
        if not op_match or isinstance(value, Symbolic):
            return unknown
        op, argument = op_match.groups()
        is_set = value is not None and (value != "" or not op.startswith(":"))
        if op.endswith(("-", "=")):
            if is_set:
                return value, line
            fallback = self._fallback(argument, part)
            if op.endswith("="):
                self.vars[name] = Var(fallback, part.line, name in self.environ)
            return fallback, part.line
        if op.endswith("+"):
            if value is None:
                return unknown
            return (self._fallback(argument, part), part.line) if is_set else ("", part.line)
        return (value, line) if is_set else unknown

    def _fallback(self, text: str, part: Part) -> str | Symbolic:
        self.depth += 1
        try:
            parts = self._lexer.fragment(text, part.line)
            return self._join_parts(parts, part.line)
        finally:
            self.depth -= 1

    def _arith(self, part: Part) -> str | None:
        expression = self._fallback(part.text, part)
        if isinstance(expression, Symbolic) or len(expression) > 200:
            return None
        unresolved = False

        def lookup(m: re.Match[str]) -> str:
            nonlocal unresolved
            var = self.vars.get(m.group(0))
            self.referenced.add(m.group(0))
            value = var.value if var else self.environ.get(m.group(0))
            if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]+\s*", value):
                return f"({value.strip()})"
            unresolved = True
            return "0"

        expression = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lookup, expression)
        if unresolved:
            return None
        result = _integer_arithmetic(expression)
        return None if result is None else str(result)


def _tested_empty(node: Node) -> str | None:
    """NAME when node is `[ -z "$NAME" ]` (or test / [[ ]]): `... && NAME=x` gives a default."""
    return _test_operand(node, "-z")


def _tested_set(node: Node) -> str | None:
    return _test_operand(node, "-n")


def _test_operand(node: Node, flag: str) -> str | None:
    if not isinstance(node, Cmd) or len(node.words) < 3:
        return None
    raws = [w.raw for w in node.words]
    if raws[0] not in ("[", "[[", "test") or raws[1] != flag:
        return None
    m = re.fullmatch(r'"?\$\{?([A-Za-z_][A-Za-z0-9_]*)(:-)?\}?"?', raws[2])
    return m.group(1) if m else None


def join(values: list) -> str | Symbolic:
    """Several values as one: the text joined by spaces, symbolic if any part is."""
    texts = [str(v[0] if isinstance(v, tuple) else v) for v in values]
    symbolic = any(isinstance(v[0] if isinstance(v, tuple) else v, Symbolic) for v in values)
    return Symbolic(" ".join(texts)) if symbolic else " ".join(texts)


def _integer_arithmetic(expression: str) -> int | None:
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
