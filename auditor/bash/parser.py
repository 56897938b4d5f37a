"""Bash grammar over the lexer's tokens: simple commands and the compound commands around them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from auditor.bash.lexer import MAX_NESTING, REDIRECTS, Heredoc, Operator, Part, Token, Word
from auditor.errors import InputError
from auditor.findings import Finding

_KEYWORDS = {"if", "then", "elif", "else", "fi", "for", "select", "while", "until", "do", "done",
             "case", "esac", "in", "{", "}", "function", "[[", "!"}


@dataclass
class Cmd:
    words: list[Word]
    line: int
    end_line: int
    stdin: Heredoc | None = None  # the here-document the command reads (`sbatch <<EOF`)
    herestring: Word | None = None  # the word a `<<< WORD` here-string feeds it (`read A B <<< "$x"`)
    stdout: Word | None = None  # the file its output goes to (`printf '%s' "$C" > "$FILE"`)
    # every redirection as written, in order: (operator with its fd, e.g. "<", "2>", the target)
    redirects: list[tuple[str, Word]] = field(default_factory=list)


@dataclass
class Branches:
    """if/elif/else, case: exactly one branch runs (`exhaustive` when one surely does)."""

    line: int
    conditions: list[list[Node]]
    bodies: list[list[Node]]
    exhaustive: bool
    subject: Word | None = None  # case: the word matched; patterns[k] are body k's patterns
    patterns: list[list[Word]] = field(default_factory=list)
    fallthrough: bool = False  # case: a `;&` or `;;&` runs more than the first match


@dataclass
class ShellLoop:
    line: int
    var: str | None
    condition: list[Node]
    body: list[Node]
    items: list[Word] | None = None  # `for VAR in WORDS`: the words; None for `for VAR` and `while`
    until: bool = False  # `until COND`: the body runs while COND fails


@dataclass
class CommandGroup:
    body: list[Node]
    subshell: bool
    background: bool = False  # a job ended by `&`: its status is no command's the script checks


@dataclass
class AndOr:
    first: Node
    rest: list[tuple[str, Node]]


@dataclass
class Pipeline:
    commands: list[Node]
    negated: bool = False  # `! cmd`: the exit status inverted


@dataclass
class Function:
    name: str
    body: Node


Node = Cmd | Branches | ShellLoop | CommandGroup | AndOr | Pipeline | Function


def children(node: Node) -> list[Node]:
    """The nodes a compound command holds: its conditions, bodies, list members, function body."""
    if isinstance(node, Branches):
        return [n for part in (*node.conditions, *node.bodies) for n in part]
    if isinstance(node, ShellLoop):
        return node.condition + node.body
    if isinstance(node, CommandGroup):
        return node.body
    if isinstance(node, AndOr):
        return [node.first, *(n for _, n in node.rest)]
    if isinstance(node, Pipeline):
        return node.commands
    if isinstance(node, Function):
        return [node.body]
    return []


def simple_commands(nodes: list[Node]) -> Iterator[Cmd]:
    """Every simple command of `nodes`, conditions, bodies and function bodies included."""
    for node in nodes:
        if isinstance(node, Cmd):
            yield node
        else:
            yield from simple_commands(children(node))


class ShellParser:
    """Bash grammar, best effort: a syntax error becomes a diagnostic and parsing goes on."""

    def __init__(self, tokens: list[Token], path: str, diagnostics: list[Finding]) -> None:
        self.t = tokens
        self.p = 0
        self.path = path
        self.diagnostics = diagnostics
        self.depth = 0

    def parse(self) -> list[Node]:
        return self._list(frozenset())

    def _peek(self, k: int = 0) -> Token | None:
        return self.t[self.p + k] if self.p + k < len(self.t) else None

    def _op(self, k: int = 0) -> str | None:
        """The text of the operator k tokens ahead; None where that is a word or the end."""
        tok = self._peek(k)
        return tok.text if isinstance(tok, Operator) else None

    def _is_kw(self, tok: Token | None, words: frozenset[str] | set[str]) -> bool:
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
        while self._op() in ("\n", ";"):
            self.p += 1

    def _list(self, terms: frozenset[str]) -> list[Node]:
        items: list[Node] = []
        while (tok := self._peek()) is not None:
            if isinstance(tok, Operator):
                if tok.text in ("\n", ";", "&"):
                    self.p += 1
                elif tok.text in terms:
                    break
                elif tok.text == "(" or tok.text in REDIRECTS:  # `>log 2>&1 cmd`: redirects may lead
                    items.append(self._job())
                else:
                    self._syntax(tok.line, f"unexpected `{tok.text}`")
                    self.p += 1
            elif self._is_kw(tok, terms):
                break
            else:
                items.append(self._job())
        return items

    def _job(self) -> Node:
        """A list's and-or item; one ended by `&` runs in a subshell of its own (bash(1) Lists: "the
        shell executes the command in the background in a subshell"): its `exit`, `cd`, functions and
        variables end with it (`serve() { ...; exit $?; }; serve &` goes on to the next line)."""
        node = self._and_or()
        return CommandGroup([node], subshell=True, background=True) if self._op() == "&" else node

    def _and_or(self) -> Node:
        first = self._pipeline()
        rest: list[tuple[str, Node]] = []
        while isinstance(op := self._peek(), Operator) and op.text in ("&&", "||"):
            self.p += 1
            while self._op() == "\n":
                self.p += 1
            rest.append((op.text, self._pipeline()))
        return AndOr(first, rest) if rest else first

    def _pipeline(self) -> Node:
        negated = self._is_kw(self._peek(), {"!"})
        self.p += negated
        commands = [self._command()]
        while isinstance(op := self._peek(), Operator) and op.text in ("|", "|&"):
            self.p += 1
            while self._op() == "\n":
                self.p += 1
            commands.append(self._command())
        return Pipeline(commands, negated) if len(commands) > 1 or negated else commands[0]

    def _command(self) -> Node:
        tok = self._peek()
        compound = (isinstance(tok, Operator) and tok.text == "(") or self._is_kw(
            tok, {"if", "for", "select", "while", "until", "case", "{", "function"})
        if tok is None or not compound:
            if isinstance(tok, Word) and self._op(1) == "(" and self._op(2) == ")":
                self.p += 3
                self._skip_newlines()
                return self._nested(lambda: Function(tok.raw, self._command()), tok.line)
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

    def _compound(self, tok: Token) -> Node:
        line = tok.line
        if isinstance(tok, Operator):  # ( subshell ) or (( arithmetic ))
            if self._op(1) == "(":
                self._skip_arithmetic()
                return Cmd([], line, line)
            self.p += 1
            body = self._list(frozenset({")"}))
            if self._op() == ")":
                self.p += 1
            else:
                self._syntax(line, "`)` expected")
            return CommandGroup(body, subshell=True)
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
            return Branches(line, conditions, bodies, exhaustive)
        if word in ("for", "select"):
            var = None
            if self._op() == "(":
                self._skip_arithmetic()
            elif isinstance(nxt := self._peek(), Word):
                var = nxt.raw
                self.p += 1
            self._skip_newlines()
            items = None
            if self._is_kw(self._peek(), {"in"}):
                self.p += 1
                items = []
                while isinstance(item := self._peek(), Word):
                    items.append(item)
                    self.p += 1
            loop = self._loop_body(line, var, [])
            loop.items = items if word == "for" else None  # `select` waits for the user's choice
            return loop
        if word in ("while", "until"):
            loop = self._loop_body(line, None, self._list(frozenset({"do"})))
            loop.until = word == "until"
            return loop
        if word == "case":
            subject = nxt if isinstance(nxt := self._peek(), Word) else None
            if subject is not None:
                self.p += 1
            self._skip_newlines()
            self._expect("in", line)
            bodies = []
            patterns: list[list[Word]] = []
            catch_all = fallthrough = False
            while True:
                self._skip_newlines()
                cur = self._peek()
                if cur is None:
                    self._syntax(line, "`esac` expected")
                    break
                if self._is_kw(cur, {"esac"}):
                    self.p += 1
                    break
                patterns.append([])
                while (cur := self._peek()) is not None and not (isinstance(cur, Operator) and cur.text == ")"):
                    self.p += 1
                    catch_all |= isinstance(cur, Word) and cur.raw == "*"
                    if isinstance(cur, Word):
                        patterns[-1].append(cur)
                    if isinstance(cur, Operator) and cur.text not in ("(", "|"):
                        break
                else:
                    if cur is not None:
                        self.p += 1
                bodies.append(self._list(frozenset({";;", ";&", ";;&", "esac"})))
                if self._op() in (";;", ";&", ";;&"):
                    fallthrough |= self._op() != ";;"
                    self.p += 1
            return Branches(line, [[] for _ in bodies], bodies, exhaustive=catch_all,
                            subject=subject, patterns=patterns, fallthrough=fallthrough)
        if word == "{":
            body = self._list(frozenset({"}"}))
            self._expect("}", line)
            return CommandGroup(body, subshell=False)
        # function NAME [()] BODY
        name = nxt.raw if isinstance(nxt := self._peek(), Word) else ""
        self.p += 1 if name else 0
        if self._op() == "(":
            self.p += 2 if self._op(1) == ")" else 1
        self._skip_newlines()
        return Function(name, self._command())

    def _loop_body(self, line: int, var: str | None, condition: list[Node]) -> ShellLoop:
        self._skip_newlines()
        self._expect("do", line)
        body = self._list(frozenset({"done"}))
        self._expect("done", line)
        return ShellLoop(line, var, condition, body)

    def _skip_arithmetic(self) -> None:
        depth = 0
        while (tok := self._peek()) is not None:
            self.p += 1
            if isinstance(tok, Operator) and tok.text == "(":
                depth += 1
            elif isinstance(tok, Operator) and tok.text == ")":
                depth -= 1
                if depth <= 0:
                    if self._op() == ")":
                        self.p += 1
                    return

    def _redirects(self, seen: list[tuple[str, Word]] | None = None) -> tuple[Heredoc | None, Word | None, Word | None]:
        """Skip redirections (each appended to `seen`); the here-document, the here-string and the
        file standard output is written over (`> FILE`), among them, if any."""
        document = string = out = None
        while isinstance(op := self._peek(), Operator) and op.text in REDIRECTS:
            self.p += 1
            if isinstance(target := self._peek(), Word):
                self.p += 1
                if seen is not None:
                    seen.append((op.fd + op.text, target))
                document = target.heredoc or document
                string = target if op.text == "<<<" else string
                out = target if op.text in (">", ">|") and op.fd in ("", "1") else out
        return document, string, out

    def _simple(self) -> Cmd:
        tok = self._peek()
        words: list[Word] = []
        stdin: Heredoc | None = None
        herestring = stdout = None
        redirects: list[tuple[str, Word]] = []
        test = isinstance(tok, Word) and tok.raw == "[["
        while (tok := self._peek()) is not None:
            if isinstance(tok, Word):
                words.append(tok)
                self.p += 1
                if test and tok.raw == "]]":
                    test = False
            elif isinstance(tok, Operator) and tok.text in REDIRECTS and not test:
                document, string, out = self._redirects(redirects)
                stdin, herestring, stdout = document or stdin, string or herestring, out or stdout
            elif test:  # inside `[[ ]]` operators and newlines are part of the test
                if isinstance(tok, Operator) and tok.text in ("&&", "||"):  # kept: they join tests
                    words.append(Word([Part("lit", tok.text, False, tok.line)], tok.line, tok.line, tok.text))
                self.p += 1
            else:
                break
        line = words[0].line if words else (tok.line if tok else 0)
        if test:
            self._syntax(line, "`]]` expected")
        return Cmd(words, line, max((w.end_line for w in words), default=line), stdin, herestring, stdout,
                   redirects)
