"""Reads a bash launch script into a LaunchConfig without running anything.

Bash is read the way bash reads it (quotes, `\\` continuations, `${VAR:-default}`, arrays, word
splitting of unquoted expansions, here-documents, if/for/case blocks), because a flag hidden in
`${EXTRA_ARGS[@]}` or a value quoted the wrong way is exactly what an infra engineer needs to
see. What cannot be known statically (`$(hostname)`, `$1`, a variable the script inherits) stays
`Symbolic`. An unassigned variable is unknown; where the script gives it a fallback
(`${NNODES:-16}`, `[ -z "$NNODES" ] && NNODES=16`) the fallback is taken.

Which commands train, how launchers size the world and how Megatron-LM spells its flags is
framework knowledge kept in rules/megatron-lm.toml. Only unreadable input raises InputError
(bad bytes, an unterminated quote, no training command); everything else becomes a diagnostic.
"""

from __future__ import annotations

import ast
import bisect
import fnmatch
import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from auditor import rules
from auditor.config.model import EnvVar, Flag, LaunchConfig, Scalar, Symbolic
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
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
_PARAM = re.compile(r"(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:\[([^\]]*)\])?(.*)", re.DOTALL)
_PARAM_OP = re.compile(r"(:?[-=+?])(.*)", re.DOTALL)
# `# torch==2.10.0`, `# megatron-core==0.17.0`: the versions a script was written for.
_PIN = re.compile(r"(?<![\w.-])([A-Za-z][A-Za-z0-9_.-]*)\s*==\s*([0-9][0-9A-Za-z.+_-]*)")
_NUMBER = re.compile(r"-\.?[0-9]")
_KEYWORDS = {"if", "then", "elif", "else", "fi", "for", "select", "while", "until", "do", "done",
             "case", "esac", "in", "{", "}", "function", "[[", "!"}


# --- entry points --------------------------------------------------------------------------------


def read_launch(
    path: str | Path,
    *,
    environ: Mapping[str, str] | None = None,
    megatron_version: str | None = None,
) -> LaunchConfig:
    """Read a launch script from disk; see parse_launch."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(name, "no such launch script") from None
    except IsADirectoryError:
        raise InputError(name, "is a directory, not a launch script") from None
    except OSError as exc:
        raise InputError(name, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(name, f"not UTF-8 text (byte 0x{raw[exc.start]:02x})", line) from None
    return parse_launch(text, name, environ=environ, megatron_version=megatron_version)


def parse_launch(
    text: str,
    path: str = "<string>",
    *,
    environ: Mapping[str, str] | None = None,
    megatron_version: str | None = None,
) -> LaunchConfig:
    """Find the training command in `text` and read its flags, environment and world size.

    `environ`: variables the script inherits from the caller (the cluster's environment), used
    where the script reads a variable it never assigns. `megatron_version`: the megatron-core
    release the training script comes from, to check Megatron-LM flag spellings against it.
    """
    diagnostics: list[Finding] = []
    if "\r\n" in text:
        line = text[: text.index("\r\n")].count("\n") + 1
        diagnostics.append(Finding(
            "launch.crlf", "warning",
            "the script has Windows (CRLF) line endings: bash reads the `\\r` as part of each line, "
            "so `\\` at a line end does not continue the command and values end in `\\r`; "
            "read here as if the line endings were LF",
            fix=f"dos2unix {path}", where=f"{path}:{line}"))
        text = text.replace("\r\n", "\n")
    spelling = _Spelling.load(megatron_version)
    lexer = _Lexer(text, path)
    tokens = lexer.tokens()
    nodes = _Parser(tokens, path, diagnostics).parse()
    shell = _Shell(path, spelling, dict(environ or {}), diagnostics, text.split("\n"))
    shell.run(nodes)
    config = _build(shell, spelling, path)
    for name, version, _ in lexer.pins:
        config.pins.setdefault(name, version)
    torch_pins = [(v, ln) for name, v, ln in lexer.pins if name == "torch"]
    if torch_pins:
        config.torch_pin = torch_pins[0][0]
        if len({pin for pin, _ in torch_pins}) > 1:
            config.diagnostics.append(Finding(
                "launch.torch-pin", "warning",
                "several torch pins in comments: "
                + ", ".join(f"torch=={p} (line {ln})" for p, ln in torch_pins)
                + f"; using torch=={config.torch_pin}",
                fix="keep one `# torch==X.Y.Z` comment", where=f"{path}:{torch_pins[1][1]}"))
    return config


# --- rules ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Spelling:
    """rules/megatron-lm.toml, indexed for the reader."""

    version: str | None
    latest: str | None
    flags: dict[str, dict]
    no_flags: dict[str, dict]
    launchers: tuple[dict, ...]
    swift_scripts: tuple[dict, ...]
    wrappers: frozenset[str]
    shells: frozenset[str]

    @staticmethod
    @functools.lru_cache(maxsize=8)
    def load(version: str | None) -> _Spelling:
        rs = rules.load("megatron-lm", version)
        wrappers = rs.section("wrappers")
        return _Spelling(
            version=version,
            latest=rs.section("framework").get("latest_read"),
            flags={e["spelling"]: e for e in rs.table("flag")},
            no_flags={s: e for e in rs.table("no_flag") for s in e["spellings"]},
            launchers=tuple(rs.table("launcher")),
            swift_scripts=tuple(rs.table("swift_script")),
            wrappers=frozenset(wrappers.get("programs", ())),
            shells=frozenset(wrappers.get("shells", ())),
        )

    def outdated(self, entry: dict) -> bool:
        """A spelling current releases no longer accept (checked against the newest tag read)."""
        return bool(self.latest) and rules.version_in(self.latest, entry.get("versions", "*")) is False

    def looked_for(self) -> str:
        names = []
        for launcher in self.launchers:
            if launcher.get("program"):
                names.append(f"`{launcher['program']} {'|'.join(launcher['subcommands'])}`")
            names += [f"`{p} SCRIPT`" for p in launcher.get("programs", ())]
            names += [f"`python -m {m} SCRIPT`" for m in launcher.get("python_modules", ())]
        return ", ".join(names)


# --- lexer ---------------------------------------------------------------------------------------


@dataclass
class _Part:
    kind: str  # "lit" | "param" (text = inside of ${...} or the name) | "cmd" | "arith" | "array"
    text: str
    quoted: bool
    line: int
    src: str = ""  # the expansion as written, for Symbolic values
    elements: list[_Word] = field(default_factory=list)  # kind "array"


@dataclass
class _Word:
    parts: list[_Part]
    line: int
    end_line: int
    raw: str


@dataclass
class _Op:
    text: str
    line: int


_Token = _Word | _Op


class _Lexer:
    """Bash tokens: words (with their quoted and expanded parts) and operators."""

    def __init__(self, text: str, path: str, line_base: int = 0) -> None:
        self.s = text
        self.path = path
        self.line_base = line_base
        self._newlines = [i for i, c in enumerate(text) if c == "\n"]
        self.pins: list[tuple[str, str, int]] = []  # (distribution, version, line) from comments

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
                out.append(_Op("\n", self.line(i)))
                i += 1
                for delimiter, strip in heredocs:
                    i = self._skip_heredoc(i, delimiter, strip)
                heredocs.clear()
            elif c == "#":
                end = s.find("\n", i)
                end = n if end < 0 else end
                for pin in _PIN.finditer(s, i, end):
                    name = pin.group(1).lower().replace("_", "-")
                    self.pins.append((name, pin.group(2).rstrip("."), self.line(i)))
                i = end
            else:
                fd = re.match(r"[0-9]+(?=[<>])", s[i:i + 12])
                start = i + (fd.end() if fd else 0)
                op = next((o for o in _OPERATORS if s.startswith(o, start)), None)
                if op is not None:
                    out.append(_Op(op, self.line(i)))
                    i = start + len(op)
                    if op in ("<<", "<<-"):
                        want_delimiter = op == "<<-"
                    continue
                parts, j = self._scan(i, _META, quoted=False)
                word = _Word(parts, self.line(i), self.line(max(i, j - 1)), s[i:j])
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

    def fragment(self, text: str, line: int) -> list[_Part]:
        """The parts of a word inside an expansion (`${X:-default word}`), with no splitting."""
        sub = _Lexer(text, self.path, line - 1)
        parts, _ = sub._scan(0, frozenset(), quoted=False)
        return parts

    def _scan(self, i: int, stop: frozenset[str], quoted: bool) -> tuple[list[_Part], int]:
        """Scan one word (or the inside of double quotes when `quoted`) from i."""
        s, n = self.s, len(self.s)
        parts: list[_Part] = []
        buf: list[str] = []
        start = buf_start = i

        def flush(q: bool = quoted) -> None:
            if buf:
                parts.append(_Part("lit", "".join(buf), q, self.line(buf_start)))
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
                if c == "(" and _ASSIGN.fullmatch(s[start:i]) and stop is _META:
                    flush()
                    elements, i = self._array(i)
                    parts.append(_Part("array", "", False, self.line(i), elements=elements))
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
                parts.append(_Part("lit", s[i + 1:end], True, self.line(i)))
                i = end + 1
            elif c == "$" and s.startswith("$'", i) and not quoted:
                flush()
                text, i = self._ansi_c(i)
                parts.append(_Part("lit", text, True, self.line(i)))
            elif c == '"' or (c == "$" and s.startswith('$"', i) and not quoted):
                flush()
                opening = i
                i += 2 if c == "$" else 1
                inner, i = self._scan(i, stop, quoted=True)
                if i >= n:
                    raise self._fail("unterminated double quote", opening)
                parts.extend(inner or [_Part("lit", "", True, self.line(opening))])
                i += 1
            elif c == "`":
                end = i + 1
                while end < n and s[end] != "`":
                    end += 2 if s[end] == "\\" else 1
                if end >= n:
                    raise self._fail("unterminated backquote", i)
                flush()
                parts.append(_Part("cmd", s[i + 1:end], quoted, self.line(i), s[i:end + 1]))
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

    def _dollar(self, i: int, quoted: bool) -> tuple[_Part, int]:
        s, line = self.s, self.line(i)
        if s.startswith("${", i):
            end = self._match(i + 2, "{", "}")
            if end < 0:
                raise self._fail("unterminated ${", i)
            return _Part("param", s[i + 2:end], quoted, line, s[i:end + 1]), end + 1
        if s.startswith("$(", i):
            end = self._match(i + 2, "(", ")")
            if end < 0:
                raise self._fail("unterminated $(", i)
            if s.startswith("$((", i) and s[end - 1] == ")" and self._match(i + 3, "(", ")") == end - 1:
                return _Part("arith", s[i + 3:end - 1], quoted, line, s[i:end + 1]), end + 1
            return _Part("cmd", s[i + 2:end], quoted, line, s[i:end + 1]), end + 1
        name = _NAME.match(s, i + 1)
        if name:
            return _Part("param", name.group(0), quoted, line, s[i:name.end()]), name.end()
        if s[i + 1] in "0123456789@*#?$!-":
            return _Part("param", s[i + 1], quoted, line, s[i:i + 2]), i + 2
        return _Part("lit", "$", quoted, line), i + 1

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

    def _array(self, i: int) -> tuple[list[_Word], int]:
        """`NAME=( a b # comment\\n c )` from the `(` at i; returns the elements and the index after `)`."""
        s, n = self.s, len(self.s)
        opening, i = i, i + 1
        elements: list[_Word] = []
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
            elements.append(_Word(parts, self.line(i), self.line(j - 1), s[i:j]))
            i = j


# --- parser --------------------------------------------------------------------------------------


@dataclass
class _Cmd:
    words: list[_Word]
    line: int
    end_line: int


@dataclass
class _Branches:
    """if/elif/else, case: exactly one branch runs (`exhaustive` when one surely does)."""

    line: int
    conditions: list[list[_Node]]
    bodies: list[list[_Node]]
    exhaustive: bool


@dataclass
class _Loop:
    line: int
    var: str | None
    condition: list[_Node]
    body: list[_Node]


@dataclass
class _Group:
    body: list[_Node]
    subshell: bool


@dataclass
class _AndOr:
    first: _Node
    rest: list[tuple[str, _Node]]


@dataclass
class _Pipeline:
    commands: list[_Node]


@dataclass
class _Function:
    name: str
    body: _Node


_Node = _Cmd | _Branches | _Loop | _Group | _AndOr | _Pipeline | _Function


class _Parser:
    """Bash grammar, best effort: a syntax error becomes a diagnostic and parsing goes on."""

    def __init__(self, tokens: list[_Token], path: str, diagnostics: list[Finding]) -> None:
        self.t = tokens
        self.p = 0
        self.path = path
        self.diagnostics = diagnostics
        self.depth = 0

    def parse(self) -> list[_Node]:
        return self._list(frozenset())

    def _peek(self, k: int = 0) -> _Token | None:
        return self.t[self.p + k] if self.p + k < len(self.t) else None

    def _is_kw(self, tok: _Token | None, words: frozenset[str] | set[str]) -> bool:
        return isinstance(tok, _Word) and tok.raw in words and tok.raw in _KEYWORDS

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
        while isinstance(self._peek(), _Op) and self._peek().text in ("\n", ";"):
            self.p += 1

    def _list(self, terms: frozenset[str]) -> list[_Node]:
        items: list[_Node] = []
        while (tok := self._peek()) is not None:
            if isinstance(tok, _Op):
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

    def _and_or(self) -> _Node:
        first = self._pipeline()
        rest: list[tuple[str, _Node]] = []
        while isinstance(op := self._peek(), _Op) and op.text in ("&&", "||"):
            self.p += 1
            while isinstance(self._peek(), _Op) and self._peek().text == "\n":
                self.p += 1
            rest.append((op.text, self._pipeline()))
        return _AndOr(first, rest) if rest else first

    def _pipeline(self) -> _Node:
        if self._is_kw(self._peek(), {"!"}):
            self.p += 1
        commands = [self._command()]
        while isinstance(op := self._peek(), _Op) and op.text in ("|", "|&"):
            self.p += 1
            while isinstance(self._peek(), _Op) and self._peek().text == "\n":
                self.p += 1
            commands.append(self._command())
        return _Pipeline(commands) if len(commands) > 1 else commands[0]

    def _command(self) -> _Node:
        tok = self._peek()
        compound = (isinstance(tok, _Op) and tok.text == "(") or self._is_kw(
            tok, {"if", "for", "select", "while", "until", "case", "{", "function"})
        if not compound:
            if (isinstance(tok, _Word) and isinstance(self._peek(1), _Op) and self._peek(1).text == "("
                    and isinstance(self._peek(2), _Op) and self._peek(2).text == ")"):
                self.p += 3
                self._skip_newlines()
                return self._nested(lambda: _Function(tok.raw, self._command()), tok.line)
            return self._simple()
        node = self._nested(lambda: self._compound(tok), tok.line)
        self._redirects()
        return node

    def _nested(self, build: Callable[[], _Node], line: int) -> _Node:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise InputError(self.path, f"commands nested more than {MAX_NESTING} levels deep", line)
        try:
            return build()
        finally:
            self.depth -= 1

    def _compound(self, tok: _Token) -> _Node:
        line = tok.line
        if isinstance(tok, _Op):  # ( subshell ) or (( arithmetic ))
            if isinstance(self._peek(1), _Op) and self._peek(1).text == "(":
                self._skip_arithmetic()
                return _Cmd([], line, line)
            self.p += 1
            body = self._list(frozenset({")"}))
            if isinstance(self._peek(), _Op) and self._peek().text == ")":
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
            if isinstance(self._peek(), _Op) and self._peek().text == "(":
                self._skip_arithmetic()
            elif isinstance(self._peek(), _Word):
                var = self._peek().raw
                self.p += 1
            self._skip_newlines()
            if self._is_kw(self._peek(), {"in"}):
                self.p += 1
                while isinstance(self._peek(), _Word):
                    self.p += 1
            return self._loop_body(line, var, [])
        if word in ("while", "until"):
            return self._loop_body(line, None, self._list(frozenset({"do"})))
        if word == "case":
            if isinstance(self._peek(), _Word):
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
                while (tok := self._peek()) is not None and not (isinstance(tok, _Op) and tok.text == ")"):
                    self.p += 1
                    catch_all |= isinstance(tok, _Word) and tok.raw == "*"
                    if isinstance(tok, _Op) and tok.text not in ("(", "|"):
                        break
                else:
                    if tok is not None:
                        self.p += 1
                bodies.append(self._list(frozenset({";;", ";&", ";;&", "esac"})))
                if isinstance(self._peek(), _Op) and self._peek().text in (";;", ";&", ";;&"):
                    self.p += 1
            return _Branches(line, [[] for _ in bodies], bodies, exhaustive=catch_all)
        if word == "{":
            body = self._list(frozenset({"}"}))
            self._expect("}", line)
            return _Group(body, subshell=False)
        # function NAME [()] BODY
        name = self._peek().raw if isinstance(self._peek(), _Word) else ""
        self.p += 1 if name else 0
        if isinstance(self._peek(), _Op) and self._peek().text == "(":
            self.p += 2 if isinstance(self._peek(1), _Op) and self._peek(1).text == ")" else 1
        self._skip_newlines()
        return _Function(name, self._command())

    def _loop_body(self, line: int, var: str | None, condition: list[_Node]) -> _Loop:
        self._skip_newlines()
        self._expect("do", line)
        body = self._list(frozenset({"done"}))
        self._expect("done", line)
        return _Loop(line, var, condition, body)

    def _skip_arithmetic(self) -> None:
        depth = 0
        while (tok := self._peek()) is not None:
            self.p += 1
            if isinstance(tok, _Op) and tok.text == "(":
                depth += 1
            elif isinstance(tok, _Op) and tok.text == ")":
                depth -= 1
                if depth <= 0:
                    if isinstance(self._peek(), _Op) and self._peek().text == ")":
                        self.p += 1
                    return

    def _redirects(self) -> None:
        while isinstance(op := self._peek(), _Op) and op.text in _REDIRECTS:
            self.p += 1
            if isinstance(self._peek(), _Word):
                self.p += 1

    def _simple(self) -> _Cmd:
        tok = self._peek()
        words: list[_Word] = []
        test = isinstance(tok, _Word) and tok.raw == "[["
        while (tok := self._peek()) is not None:
            if isinstance(tok, _Word):
                words.append(tok)
                self.p += 1
                if test and tok.raw == "]]":
                    test = False
            elif isinstance(tok, _Op) and tok.text in _REDIRECTS and not test:
                self._redirects()
            elif test and tok.text != "\n":
                self.p += 1
            else:
                break
        line = words[0].line if words else (tok.line if tok else 0)
        return _Cmd(words, line, max((w.end_line for w in words), default=line))


# --- shell state and expansion -------------------------------------------------------------------


@dataclass
class _Var:
    value: str | Symbolic | list[tuple[Scalar, int]]  # a list for bash arrays: (element, line)
    line: int
    exported: bool


@dataclass
class _Field:
    """One word after expansion, and the line the user should look at for it."""

    value: Scalar
    line: int
    unsplit: bool = False  # holds an unquoted expansion that could not be resolved


@dataclass
class _Candidate:
    launcher: dict
    invoked: str  # "megatron sft", "torchrun", "python -m torch.distributed.run"
    subcommand: str
    args: list[_Field]
    wrapper: list[_Field]
    inline: dict[str, EnvVar]
    env: dict[str, _Var]
    line: int
    end_line: int
    conditional: bool


class _FieldBuilder:
    """Bash word splitting: unquoted expansion results split on blanks, everything else joins."""

    def __init__(self) -> None:
        self.fields: list[_Field] = []
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
            self.fields.append(_Field(Symbolic(joined) if symbolic else joined, self._line, self._unsplit))
        self._segments, self._unsplit = None, False


class _Shell:
    """Walks the parsed script in order, keeping variables, and collects training commands."""

    def __init__(self, path: str, spelling: _Spelling, environ: dict[str, str],
                 diagnostics: list[Finding], lines: list[str]) -> None:
        self.path = path
        self.lines = lines  # the script's text, to say why a line ends a command
        self.spelling = spelling
        self.environ = environ
        self.diagnostics = diagnostics
        self.vars: dict[str, _Var] = {}
        self.referenced: set[str] = set()
        self.functions: dict[str, _Node] = {}
        self.candidates: list[_Candidate] = []
        self.unresolved_commands: list[_Field] = []  # commands whose name is itself unknown
        self.conditional = 0
        self.depth = 0
        self._lexer = _Lexer("", path)

    # -- walking

    def run(self, nodes: list[_Node]) -> None:
        k = 0
        while k < len(nodes):
            node = nodes[k]
            if isinstance(node, _Cmd):
                candidate = self._command(node)
                if candidate is not None:
                    k = self._join_broken_continuation(nodes, k, candidate)
            else:
                self._node(node)
            k += 1

    def _node(self, node: _Node) -> None:
        if isinstance(node, _Cmd):
            self._command(node)
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
                self.vars[node.var] = _Var(Symbolic(f"${node.var}"), node.line, False)
            self.run(node.condition)
            self._branches([node.body], exhaustive=False)
        elif isinstance(node, _Group):
            saved = dict(self.vars)
            self.run(node.body)
            if node.subshell:
                self.vars = saved
        elif isinstance(node, _Function):
            self.functions[node.name] = node.body

    def _branches(self, bodies: list[list[_Node]], exhaustive: bool, default_for: str | None = None,
                  block: bool = True) -> None:
        """Run each branch from the same state; a variable the branches disagree on becomes symbolic.

        `block`: an if/case/loop body (reported when it holds the training command), not the
        right side of `cd dir && torchrun ...`.
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
        merged: dict[str, _Var] = {}
        for name in set().union(*ends):
            seen = [end.get(name) for end in ends]
            if name == default_for and before.get(name) is None:
                seen = [v for v in seen if v is not None]
            first = seen[0]
            if all(v is not None and first is not None and v.value == first.value for v in seen):
                merged[name] = _Var(first.value, max(v.line for v in seen), any(v.exported for v in seen))
            else:
                known = [v for v in seen if v is not None]
                merged[name] = _Var(Symbolic(f"${{{name}}}"), max(v.line for v in known),
                                    any(v.exported for v in known))
        self.vars = merged

    def _command(self, cmd: _Cmd) -> _Candidate | None:
        words = cmd.words
        if not words or words[0].raw == "[[":
            return None
        k = 0
        while k < len(words) and _ASSIGN.match(words[k].raw) and words[k].parts[0].kind == "lit":
            k += 1
        fields = [f for w in words[k:] for f in self.expand(w)]
        if not fields:
            for w in words[:k]:
                self.assign(w, exported=False)
            return None
        inline = {}
        for w in words[:k]:
            name, value = self._assignment_value(w)
            inline[name] = EnvVar(name, value if not isinstance(value, list) else _join(value), w.line, "inline")
        head = fields[0].value
        if head in ("export", "declare", "typeset", "local", "readonly"):
            self._declare(head, words[k + 1:])
            return None
        if head == "unset":
            for f in fields[1:]:
                self.vars.pop(str(f.value), None)
            return None
        if head in ("source", ".") and len(fields) > 1:
            self.diagnostics.append(Finding(
                "launch.unread-file", "info",
                f"`{head} {fields[1].value}` is not followed: variables it sets are unknown here",
                where=f"{self.path}:{cmd.line}"))
            return None
        if isinstance(head, str) and head in self.functions and self.depth < MAX_NESTING:
            self.depth += 1
            try:
                self._node(self.functions[head])
            finally:
                self.depth -= 1
            return None
        return self._launch(fields, inline, cmd)

    def _declare(self, builtin: str, words: list[_Word]) -> None:
        options = "".join(w.raw[1:] for w in words if w.raw.startswith("-"))
        exported = builtin == "export" or "x" in options
        for w in words:
            if w.raw.startswith("-"):
                continue
            if _ASSIGN.match(w.raw) and w.parts[0].kind == "lit":
                self.assign(w, exported=exported)
            elif _NAME.fullmatch(w.raw) and exported:
                current = self.vars.get(w.raw)
                if current is not None:
                    self.vars[w.raw] = _Var(current.value, current.line, True)
                elif w.raw in self.environ:
                    self.vars[w.raw] = _Var(self.environ[w.raw], w.line, True)

    def _assignment_value(self, word: _Word) -> tuple[str, str | Symbolic | list[tuple[Scalar, int]]]:
        m = _ASSIGN.match(word.raw)
        name, index, append = m.group(1), m.group(2), m.group(3)
        first = word.parts[0]
        rest = [_Part("lit", first.text[len(m.group(0)):], first.quoted, first.line)] + word.parts[1:]
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

    def assign(self, word: _Word, exported: bool) -> None:
        name, value = self._assignment_value(word)
        current = self.vars.get(name)
        inherited = current.exported if current else name in self.environ
        self.vars[name] = _Var(value, word.line, exported or inherited)

    # -- expansion

    def expand(self, word: _Word) -> list[_Field]:
        builder = _FieldBuilder()
        self._expand_parts(word.parts, builder, word.line)
        builder.end()
        return builder.fields

    def _join_parts(self, parts: list[_Part], line: int) -> str | Symbolic:
        """Expansion without word splitting, as in an assignment's value."""
        builder = _FieldBuilder()
        quoted = [_Part(p.kind, p.text, True, p.line, p.src, p.elements) for p in parts]
        builder.text("", line)
        self._expand_parts(quoted, builder, line)
        builder.end()
        values = [f.value for f in builder.fields]
        return _join(values) if len(values) != 1 else values[0]

    def _expand_parts(self, parts: list[_Part], out: _FieldBuilder, line: int) -> None:
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

    def _expand_param(self, part: _Part, out: _FieldBuilder) -> None:
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

    def _param(self, part: _Part) -> tuple[Scalar | list[tuple[Scalar, int]], int]:
        """The value of one `$NAME` / `${...}` expansion and the line it was assigned on."""
        unknown = Symbolic(part.src), part.line
        m = _PARAM.fullmatch(part.text)
        if not m or not (_NAME.fullmatch(m.group(2)) or m.group(2).isdigit()) or self.depth >= MAX_NESTING:
            return unknown
        length, name, index, rest = m.groups()
        self.referenced.add(name)
        var = self.vars.get(name)
        if var is None and name in self.environ:
            var = _Var(self.environ[name], 0, True)
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
                self.vars[name] = _Var(fallback, part.line, name in self.environ)
            return fallback, part.line
        if op.endswith("+"):
            if value is None:
                return unknown
            return (self._fallback(argument, part), part.line) if is_set else ("", part.line)
        return (value, line) if is_set else unknown

    def _fallback(self, text: str, part: _Part) -> str | Symbolic:
        self.depth += 1
        try:
            parts = self._lexer.fragment(text, part.line)
            return self._join_parts(parts, part.line)
        finally:
            self.depth -= 1

    def _arith(self, part: _Part) -> str | None:
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

    # -- training commands

    def _launch(self, fields: list[_Field], inline: dict[str, EnvVar], cmd: _Cmd) -> _Candidate | None:
        """The training command in `fields`, possibly behind wrappers (srun, env, nohup, ...)."""
        wrapped = isinstance(fields[0].value, str) and os.path.basename(fields[0].value) in self.spelling.wrappers
        for k, f in enumerate(fields):
            if not isinstance(f.value, str):
                if k == 0:
                    self.unresolved_commands.append(f)
                if wrapped:
                    continue
                return None
            base = os.path.basename(f.value)
            if base in self.spelling.shells:
                return self._shell_c(fields[:k + 1], fields[k + 1:], cmd)
            launcher, invoked, sub, start = self._match_launcher(fields, k)
            if launcher is not None:
                wrapper = fields[:k]
                if wrapper and os.path.basename(str(wrapper[0].value)) == "env":
                    for w in wrapper[1:]:
                        name, eq, value = str(w.value).partition("=")
                        if eq and _NAME.fullmatch(name):
                            inline[name] = EnvVar(name, value, w.line, "inline")
                candidate = _Candidate(
                    launcher, invoked, sub, fields[start:], wrapper, inline, dict(self.vars),
                    cmd.line, cmd.end_line, self.conditional > 0)
                self.candidates.append(candidate)
                return candidate
            if not wrapped:
                return None
        return None

    def _match_launcher(self, fields: list[_Field], k: int) -> tuple[dict | None, str, str, int]:
        """(launcher rule, how it was invoked, subcommand, index of its first argument)."""
        base = os.path.basename(str(fields[k].value))
        after = fields[k + 1].value if k + 1 < len(fields) else None
        module, j = None, k + 1
        if re.fullmatch(r"python[0-9.]*", base):
            while j < len(fields) and isinstance(fields[j].value, str) and fields[j].value.startswith("-"):
                if fields[j].value == "-m" and j + 1 < len(fields):
                    module, j = fields[j + 1].value, j + 2
                    break
                j += 2 if fields[j].value in ("-X", "-W") else 1
        for launcher in self.spelling.launchers:
            if launcher.get("program") == base and isinstance(after, str) and after in launcher["subcommands"]:
                return launcher, f"{base} {after}", after, k + 2
            if base in launcher.get("programs", ()):
                return launcher, base, "", k + 1
            if module is not None and module in launcher.get("python_modules", ()):
                return launcher, f"python -m {module}", "", j
        return None, "", "", k

    def _shell_c(self, prefix: list[_Field], fields: list[_Field], cmd: _Cmd) -> _Candidate | None:
        """`bash -c "torchrun ..."`: read the string as a script of its own, in this shell."""
        scripts = [f for f in fields if isinstance(f.value, str) and f.value.endswith(".sh")]
        if scripts and not any(f.value == "-c" for f in fields):
            self.diagnostics.append(Finding(
                "launch.unread-file", "info",
                f"`{scripts[0].value}` runs as a separate script and is not read here; audit it directly "
                "if it holds the training command", where=f"{self.path}:{cmd.line}"))
        for k, f in enumerate(fields[:-1]):
            if f.value == "-c":
                if self.depth >= MAX_NESTING:
                    raise InputError(self.path, f"`bash -c` nested more than {MAX_NESTING} deep", cmd.line)
                # A symbolic string keeps its unknown parts as written (`$SLURM_NNODES`), so reading
                # it again leaves exactly those parts symbolic.
                text = str(fields[k + 1].value)
                before = len(self.candidates)
                self.depth += 1
                try:
                    tokens = _Lexer(text, self.path, fields[k + 1].line - 1).tokens()
                    self.run(_Parser(tokens, self.path, self.diagnostics).parse())
                except InputError as exc:  # the inner shell fails at run time; the script itself is fine
                    self.diagnostics.append(Finding(
                        "launch.syntax", "warning", f"the `{f.value}` string cannot be read: {exc.cause}",
                        where=f"{self.path}:{exc.line or cmd.line}"))
                finally:
                    self.depth -= 1
                for candidate in self.candidates[before:]:
                    candidate.wrapper = prefix + fields[:k + 1] + candidate.wrapper
                return None
        return None

    def _join_broken_continuation(self, nodes: list[_Node], k: int, candidate: _Candidate) -> int:
        """The seed report's shape: flags on the lines after `megatron sft`, without `\\`."""
        j = k + 1
        while (j < len(nodes) and isinstance(nodes[j], _Cmd) and nodes[j].words
               and nodes[j].words[0].raw.startswith("--")):
            j += 1
        if j == k + 1:
            return k
        command = nodes[k]
        for node in nodes[k + 1:j]:
            candidate.args.extend(f for w in node.words for f in self.expand(w))
        candidate.end_line = nodes[j - 1].end_line
        prefix_lines = []
        q, expected = k - 1, command.line - 1
        while (q >= 0 and isinstance(nodes[q], _Cmd) and nodes[q].words and nodes[q].end_line == expected
               and all(_ASSIGN.match(w.raw) for w in nodes[q].words)):
            for w in nodes[q].words:
                name, value = self._assignment_value(w)
                if not isinstance(value, list):
                    candidate.inline.setdefault(name, EnvVar(name, value, w.line, "inline"))
            prefix_lines.append(nodes[q].line)
            q, expected = q - 1, nodes[q].line - 1
        end, following = command.end_line, nodes[k + 1]
        span = f"line {end}" if command.line == end else f"lines {command.line}-{end}"
        text = self.lines[end - 1] if 0 < end <= len(self.lines) else ""
        why = ""
        if re.search(r"\\[ \t]+$", text):
            why = f" (line {end} ends in `\\` and a space: the `\\` escapes the space, not the line end)"
        elif re.search(r"#.*\\\s*$", text):
            why = f" (the `\\` at the end of line {end} is inside a comment)"
        prefix = (f"; the assignments on lines {min(prefix_lines)}-{max(prefix_lines)} are read as that "
                  "command's environment (as written they are unexported shell variables)") if prefix_lines else ""
        self.diagnostics.append(Finding(
            "launch.broken-continuation", "error",
            f"the `{candidate.invoked}` command stops at line {end}, which does not end in `\\`{why}: as written, "
            f"bash runs {span} as the whole command, then fails on line {following.line} with "
            f"`{following.words[0].raw}: command not found`; lines {following.line}-{candidate.end_line} are "
            f"read here as its continuation{prefix}",
            fix="end every line of the command except the last with ` \\` (nothing after it)",
            where=f"{self.path}:{end}",
            detail={"command_lines": [command.line, end], "continuation_lines": [following.line, candidate.end_line]}))
        return j - 1


def _tested_empty(node: _Node) -> str | None:
    """NAME when node is `[ -z "$NAME" ]` (or test / [[ ]]): `... && NAME=x` gives a default."""
    return _test_operand(node, "-z")


def _tested_set(node: _Node) -> str | None:
    return _test_operand(node, "-n")


def _test_operand(node: _Node, flag: str) -> str | None:
    if not isinstance(node, _Cmd) or len(node.words) < 3:
        return None
    raws = [w.raw for w in node.words]
    if raws[0] not in ("[", "[[", "test") or raws[1] != flag:
        return None
    m = re.fullmatch(r'"?\$\{?([A-Za-z_][A-Za-z0-9_]*)(:-)?\}?"?', raws[2])
    return m.group(1) if m else None


def _join(values: list) -> str | Symbolic:
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


# --- from the training command to a LaunchConfig -------------------------------------------------


def _build(shell: _Shell, spelling: _Spelling, path: str) -> LaunchConfig:
    if not shell.candidates:
        unknown = "".join(f"; line {f.line} runs `{f.value}`, which is not known statically"
                          for f in shell.unresolved_commands[:3])
        raise InputError(path, f"no training command found: looked for {spelling.looked_for()}, "
                               f"also behind srun/env/nohup and inside `bash -c`{unknown}")
    chosen = shell.candidates[0]
    launcher = chosen.launcher
    config = LaunchConfig(path=path, launcher="", command_line=chosen.line, end_line=chosen.end_line,
                          diagnostics=shell.diagnostics)
    config.wrapper = [f.value for f in chosen.wrapper]
    config.env = _environment(shell, chosen)
    args = chosen.args
    style = launcher["style"]
    if launcher.get("program"):
        config.launcher = f"{launcher['program']} {chosen.subcommand}"
    else:
        args, script = _torchrun_options(config, launcher, args, path)
        config.script = script
        config.launcher = chosen.invoked + (f" {os.path.basename(str(script))}" if script is not None else "")
        if isinstance(script, str) and any(fnmatch.fnmatch(script, "*" + s["pattern"]) or
                                           fnmatch.fnmatch(script, s["pattern"]) for s in spelling.swift_scripts):
            style = "ms-swift"
    config.style = style
    _read_flags(config, args, spelling, path)
    _world_size(config, launcher, chosen, spelling, path)
    for other in shell.candidates[1:]:
        config.diagnostics.append(Finding(
            "launch.several-commands", "warning",
            f"another training command at line {other.line}; this audit reads the first one, at line {chosen.line}",
            fix="audit one launch script per training command", where=f"{path}:{other.line}"))
    if chosen.conditional:
        config.diagnostics.append(Finding(
            "launch.conditional-command", "info",
            f"the training command at line {chosen.line} is inside an if/case/loop: "
            "variables set differently on other branches are read as symbolic",
            where=f"{path}:{chosen.line}"))
    _report_unexported(config, launcher, path)
    return config


def _environment(shell: _Shell, chosen: _Candidate) -> dict[str, EnvVar]:
    env: dict[str, EnvVar] = {
        name: EnvVar(name, value, 0, "environ") for name, value in shell.environ.items()}
    for name, var in chosen.env.items():
        if isinstance(var.value, list):
            continue
        if var.exported:
            env[name] = EnvVar(name, var.value, var.line, "export")
        elif name not in shell.referenced:
            env[name] = EnvVar(name, var.value, var.line, "assign")
    env.update(chosen.inline)
    return env


def _torchrun_options(config: LaunchConfig, launcher: dict, args: list[_Field],
                      path: str) -> tuple[list[_Field], Scalar]:
    """torchrun's own options up to the training script; returns the script's arguments and the script."""
    k = 0
    while k < len(args):
        value = args[k].value
        if isinstance(value, Symbolic):
            if k + 1 < len(args) and str(args[k + 1].value).endswith(".py"):
                _unresolved(config, args[k], path, "torchrun's options")
                k += 1
                continue
            return args[k + 1:], value
        if not value.startswith("-") or value == "-":
            return args[k + 1:], value
        option, eq, inline_value = value.partition("=")
        if option in launcher.get("boolean_options", ()):
            config.launcher_flags[_normalise(option)] = Flag(_normalise(option), True, args[k].line, option)
            k += 1
            continue
        if eq:
            config.launcher_flags[_normalise(option)] = Flag(
                _normalise(option), inline_value, args[k].line, option, (inline_value,))
            k += 1
        elif k + 1 < len(args):
            given = args[k + 1].value
            config.launcher_flags[_normalise(option)] = Flag(_normalise(option), given, args[k].line, option, (given,))
            k += 2
        else:
            k += 1
    return [], None


def _normalise(spelling: str) -> str:
    return spelling.lstrip("-").replace("-", "_")


def _is_option(value: Scalar) -> bool:
    return (isinstance(value, str) and value.startswith("-") and value not in ("-", "--")
            and not _NUMBER.match(value))


def _unresolved(config: LaunchConfig, f: _Field, path: str, where: str) -> None:
    config.diagnostics.append(Finding(
        "launch.unresolved-args", "warning",
        f"`{f.value}` is not known statically and may add {where} that this audit cannot see",
        fix="set the variable in the script, or pass its value to the audit", where=f"{path}:{f.line}"))


def _read_flags(config: LaunchConfig, args: list[_Field], spelling: _Spelling, path: str) -> None:
    megatron = config.style == "megatron-lm"
    single: str | None = None  # the last Megatron-LM flag that took its one value, as written
    k = 0
    while k < len(args):
        f = args[k]
        k += 1
        if isinstance(f.value, Symbolic):
            _unresolved(config, f, path, "flags")
            config.positionals.append(f.value)
            single = None
            continue
        if f.value == "--":
            config.positionals.extend(a.value for a in args[k:])
            break
        if not _is_option(f.value):
            config.positionals.append(f.value)
            if single is not None:
                config.diagnostics.append(Finding(
                    "launch.extra-argument", "error",
                    f"`{f.value}` follows `{single}`, which takes one value: Megatron-LM's parser rejects "
                    "it as an unrecognized argument", where=f"{path}:{f.line}"))
            single = None
            continue
        written, eq, inline_value = f.value.partition("=") if f.value.startswith("--") else (f.value, "", "")
        entry = spelling.flags.get(written) if megatron else None
        if megatron:
            _check_megatron_spelling(config, spelling, written, entry, f, path)
        values: list[Scalar] = [inline_value] if eq else []
        takes_value = entry is None or entry["action"] == "store"
        if not eq and takes_value:
            while k < len(args) and not _is_option(args[k].value):
                if isinstance(args[k].value, Symbolic) and args[k].unsplit and values:
                    break
                values.append(args[k].value)
                k += 1
                if entry is not None and "nargs" not in entry:
                    break
        name = entry["dest"] if entry else _normalise(written)
        if entry is not None and entry["action"] != "store":
            value: Scalar = entry["action"] == "store_true"
            if eq or (k < len(args) and not _is_option(args[k].value) and not isinstance(args[k].value, Symbolic)):
                given = inline_value if eq else args[k].value
                config.diagnostics.append(Finding(
                    "launch.flag-takes-no-value", "error",
                    f"Megatron-LM's `{written}` takes no value: argparse rejects `{given}`"
                    + (" as an explicit argument" if eq else " as an unrecognized argument"),
                    fix=f"write `{written}` alone" + (" (or drop it to keep the default)" if str(given).lower()
                                                       in ("false", "0") else ""),
                    where=f"{path}:{f.line}"))
        elif not values:
            value = True
            if entry is not None:
                config.diagnostics.append(Finding(
                    "launch.flag-needs-value", "error",
                    f"Megatron-LM's `{written}` expects a value and none follows", where=f"{path}:{f.line}"))
        else:
            value = values[0] if len(values) == 1 else _join(values)
        previous = config.flags.get(name)
        if previous is not None:
            same = previous.value == value
            config.diagnostics.append(Finding(
                "launch.repeated-flag", "info" if same else "warning",
                f"`{name}` is given twice (line {previous.line}, then line {f.line}): the last value, "
                f"`{value}`, wins" + ("" if same else f" over `{previous.value}`"),
                fix="keep one", where=f"{path}:{f.line}"))
        config.flags[name] = Flag(name, value, f.line, written, tuple(values))
        single = (f"{written} {values[0]}" if entry is not None and entry["action"] == "store" and not eq
                  and "nargs" not in entry and values else None)
    if config.style == "ms-swift" and config.positionals and str(config.positionals[0]).endswith(
            (".yaml", ".yml", ".json")):
        config.diagnostics.append(Finding(
            "launch.unread-file", "info",
            f"ms-swift reads further flags from `{config.positionals[0]}`; they are not read here",
            where=f"{path}:{config.command_line}"))


def _check_megatron_spelling(config: LaunchConfig, spelling: _Spelling, written: str,
                             entry: dict | None, f: _Field, path: str) -> None:
    where = f"{path}:{f.line}"
    if entry is None and "_" in written and written.replace("_", "-") in spelling.flags:
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "error",
            f"Megatron-LM spells it `{written.replace('_', '-')}`; its parser (allow_abbrev=False) "
            f"rejects `{written}` as an unrecognized argument",
            fix=f"write `{written.replace('_', '-')}`", where=where))
    elif entry is None and written in spelling.no_flags:
        missing = spelling.no_flags[written]
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "error",
            f"Megatron-LM has no `{written}` flag: argparse rejects it ({missing['why']})",
            fix=f"drop `{written}`", where=where, detail={"dest": missing["dest"]}))
    elif entry is not None and spelling.version is None and spelling.outdated(entry):
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "info",
            f"`{written}` exists only in Megatron-LM versions {entry['versions']}; later releases reject it",
            where=where))
    elif entry is None and spelling.version is not None and written in _Spelling.load(None).flags:
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "error",
            f"`{written}` does not exist in megatron-core {spelling.version}: argparse rejects it",
            where=where))


def _world_size(config: LaunchConfig, launcher: dict, chosen: _Candidate, spelling: _Spelling, path: str) -> None:
    env = {name: var for name, var in config.env.items() if var.how != "assign"}
    if launcher.get("program"):
        nproc_var, nnodes_var = env.get(launcher["env_nproc"]), env.get(launcher["env_nnodes"])
        if chosen.subcommand not in launcher["torchrun_subcommands"] or (nproc_var is None and nnodes_var is None):
            config.nproc_per_node, config.nnodes = 1, 1
            config.world_source = {"nproc_per_node": f"{launcher['env_nproc']} and {launcher['env_nnodes']} unset",
                                   "nnodes": f"{launcher['env_nproc']} and {launcher['env_nnodes']} unset"}
            unexported = [config.env[n] for n in (launcher["env_nproc"], launcher["env_nnodes"]) if n in config.env]
            config.diagnostics.append(Finding(
                "launch.single-process", "warning",
                f"neither {launcher['env_nproc']} nor {launcher['env_nnodes']} reaches `{config.launcher}`: "
                "it runs one process, not torchrun"
                + "".join(f"; {v.name} is assigned at line {v.line} but not exported" for v in unexported),
                fix=f"export {launcher['env_nproc']} and {launcher['env_nnodes']}, or put them before "
                    f"`{config.launcher}` on the same line", where=f"{path}:{chosen.line}"))
            return
        torchrun = next((entry for entry in spelling.launchers if entry.get("nproc_flags")), {})
        nproc = _sourced(nproc_var, path) or _torchrun_default(torchrun, "nproc", env)
        nnodes = _sourced(nnodes_var, path) or _torchrun_default(torchrun, "nnodes", env)
    else:
        nproc = _launcher_flag(config, launcher["nproc_flags"], path) or _torchrun_default(launcher, "nproc", env)
        nnodes = _launcher_flag(config, launcher["nnodes_flags"], path) or _torchrun_default(launcher, "nnodes", env)
    device_values = next((e["device_count_values"] for e in spelling.launchers if e.get("device_count_values")), [])
    config.nproc_per_node, config.world_source["nproc_per_node"] = _nproc(nproc, device_values, env, path)
    config.nnodes, config.world_source["nnodes"] = _nnodes(config, nnodes, path)


def _sourced(var: EnvVar | None, path: str) -> tuple[Scalar, str] | None:
    if var is None:
        return None
    where = "the caller's environment" if var.how == "environ" else f"{path}:{var.line}"
    return var.value, f"{var.name}={var.value} ({where})"


def _launcher_flag(config: LaunchConfig, spellings: list[str], path: str) -> tuple[Scalar, str] | None:
    for spelling in spellings:
        flag = config.launcher_flags.get(_normalise(spelling))
        if flag is not None:
            return flag.value, f"{flag.spelling} {flag.value} ({path}:{flag.line})"
    return None


def _torchrun_default(torchrun: dict, what: str, env: dict[str, EnvVar]) -> tuple[Scalar, str]:
    dest = "nproc_per_node" if what == "nproc" else "nnodes"
    var = env.get(f"{torchrun.get('env_prefix', 'PET_')}{dest.upper()}")
    if var is not None:
        return var.value, f"{var.name}={var.value} (line {var.line})"
    default = torchrun.get(f"{what}_default", "1")
    return default, f"torchrun's default --{dest.replace('_', '-')} {default}"


def _nproc(given: tuple[Scalar, str], device_values: list[str], env: dict[str, EnvVar],
           path: str) -> tuple[int | Symbolic, str]:
    value, source = given
    if isinstance(value, str) and value.strip().isdigit():
        return int(value), source
    if value in device_values:
        visible = env.get("CUDA_VISIBLE_DEVICES")
        if visible is not None and isinstance(visible.value, str):
            count = len([d for d in visible.value.split(",") if d.strip()])
            return count, f"{source}: {count} devices in CUDA_VISIBLE_DEVICES ({path}:{visible.line})"
        return Symbolic(f"{value} (the visible GPU count)"), source
    return Symbolic(str(value)), source


def _nnodes(config: LaunchConfig, given: tuple[Scalar, str], path: str) -> tuple[int | Symbolic, str]:
    value, source = given
    if isinstance(value, str):
        low, _, high = value.strip().partition(":")
        if low.isdigit() and (not high or high == low):
            return int(low), source
        if low.isdigit() and high.isdigit():
            config.diagnostics.append(Finding(
                "launch.elastic-nnodes", "info",
                f"elastic node range {value}: the world size is decided at rendezvous", where=f"{path}:{config.command_line}"))
    return Symbolic(str(value)), source


def _report_unexported(config: LaunchConfig, launcher: dict, path: str) -> None:
    read_by_launcher = {launcher.get("env_nproc"), launcher.get("env_nnodes"), "CUDA_VISIBLE_DEVICES"}
    for var in config.env.values():
        if var.how != "assign":
            continue
        important = var.name in read_by_launcher or var.name.startswith("PET_")
        config.diagnostics.append(Finding(
            "launch.not-exported", "warning" if important else "info",
            f"{var.name} is set at line {var.line} but not exported: the training command sees it only "
            f"if the calling environment already exports {var.name}",
            fix=f"export {var.name}=... (or put it before the command on the same line)",
            where=f"{path}:{var.line}"))
