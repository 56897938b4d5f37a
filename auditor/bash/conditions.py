"""Which branch of an if/case a script takes, when the values it tests are known: `case $MODEL in
7B)` after `MODEL=7B`, `if [ "$ENV" = dsw ]`. Only tests whose outcome is certain are decided
(`[`, `[[`, `test` with string, integer and emptiness operators; case patterns as globs); anything
else is None, and the walk then keeps every branch as possible."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Collection

from auditor.bash.lexer import Word
from auditor.bash.parser import AndOr, Cmd, Node, Pipeline
from auditor.bash.values import Field, segments

# Builtins whose status is fixed whatever their arguments (bash(1) SHELL BUILTIN COMMANDS: `:`
# "has no effect ... A zero exit code is returned", `true`, `false`).
_CONSTANT = {"true": True, ":": True, "false": False}
_INTEGER = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__, "-le": int.__le__,
            "-gt": int.__gt__, "-ge": int.__ge__}

Expand = Callable[[Word], list[Field]]


def condition(nodes: list[Node], expand: Expand, redefined: Collection[str] = ()) -> bool | None:
    """The outcome of an if/elif condition list (its last command's status), when certain."""
    return outcome(nodes[-1], expand, redefined) if nodes else None


def outcome(node: Node, expand: Expand, redefined: Collection[str] = ()) -> bool | None:
    """`redefined`: the names a function or alias of the script takes (see `constant`)."""
    if isinstance(node, Pipeline):
        if len(node.commands) != 1:
            return None
        inner = outcome(node.commands[0], expand, redefined)
        return None if inner is None else inner != node.negated
    if isinstance(node, AndOr):
        result = outcome(node.first, expand, redefined)
        for op, right in node.rest:
            if result is None:
                return None
            if (op == "&&") == result:
                result = outcome(right, expand, redefined)
        return result
    if isinstance(node, Cmd) and node.words and node.words[0].raw in _CONSTANT:
        return constant(node, redefined)
    if isinstance(node, Cmd):
        return _test(node, expand)
    return None


def constant(cmd: Cmd, redefined: Collection[str]) -> bool | None:
    """The status of bash's `true`, `:` or `false` (`if false; then ...`); None for any other
    command, one with redirects, or one whose name a function or alias of the script takes:
    bash looks a function up before a builtin (`true() { return 1; }; if true; ...` takes the
    else branch), an alias before both."""
    head = cmd.words[0].raw if cmd.words else ""
    if head not in _CONSTANT or cmd.redirects or head in redefined:
        return None
    return _CONSTANT[head]


def _test(cmd: Cmd, expand: Expand) -> bool | None:
    if not cmd.words or cmd.words[0].raw not in ("[", "[[", "test"):
        return None
    double = cmd.words[0].raw == "[["
    words = cmd.words[1:]
    if cmd.words[0].raw != "test":
        if not words or words[-1].raw != ("]]" if double else "]"):
            return None
        words = words[:-1]
    if double:
        return _chain(words, expand)
    return _primary(words, False, expand)


def _chain(words: list[Word], expand: Expand) -> bool | None:
    """`[[ A && B ]]`, `[[ A || B ]]`: each test of a chain of one operator, decided where those
    that decide it are (`&&`: one false, or all true); a mix of both, or parentheses: None."""
    ops = {w.raw for w in words} & {"&&", "||"}
    if len(ops) > 1 or any(w.raw in ("(", ")") for w in words):
        return None
    if not ops:
        return _primary(words, True, expand)
    op = ops.pop()
    parts: list[list[Word]] = [[]]
    for w in words:
        if w.raw == op:
            parts.append([])
        else:
            parts[-1].append(w)
    results = [_primary(part, True, expand) for part in parts]
    decisive = op == "||"  # the value that decides the chain on its own
    if decisive in results:
        return decisive
    return None if None in results else not decisive


def _primary(words: list[Word], double: bool, expand: Expand) -> bool | None:
    if double and len(words) == 3 and words[1].raw in ("==", "=", "!="):
        left, pattern = _one(words[0], expand), _pattern(words[2], expand)
        if left is None or pattern is None:
            return None
        return fnmatch.fnmatchcase(left, pattern) != (words[1].raw == "!=")
    if any(w.raw in ("&&", "||", "-a", "-o", "(", ")") for w in words):
        return None
    if len(words) == 2 and words[0].raw in ("-n", "-z"):  # known text in a value in part unknown
        fields = expand(words[1])
        if len(fields) == 1 and (double or not fields[0].unsplit) and any(
                text for text, unknown in segments(fields[0].value) if not unknown):
            return words[0].raw == "-n"
    operands: list[str] = []
    for w in words:
        fields = expand(w)
        if any(not isinstance(f.value, str) for f in fields):
            return None
        operands += [str(f.value) for f in fields] if not double else [" ".join(str(f.value) for f in fields)]
    return _evaluate(operands)


def _evaluate(args: list[str]) -> bool | None:
    if args and args[0] == "!":
        inner = _evaluate(args[1:])
        return None if inner is None else not inner
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2 and args[0] in ("-z", "-n"):
        return (args[1] == "") == (args[0] == "-z")
    if len(args) == 3 and args[1] in ("=", "==", "!="):
        return (args[0] == args[2]) != (args[1] == "!=")
    if len(args) == 3 and args[1] in _INTEGER:
        try:
            return bool(_INTEGER[args[1]](int(args[0]), int(args[2])))
        except ValueError:
            return None
    return None


def _one(word: Word, expand: Expand) -> str | None:
    fields = expand(word)
    if any(not isinstance(f.value, str) for f in fields):
        return None
    return " ".join(str(f.value) for f in fields)


def _pattern(word: Word, expand: Expand) -> str | None:
    """A glob as bash matches it: the quoted parts of the word match literally."""
    if any(p.kind != "lit" for p in word.parts):
        value = _one(word, expand)
        return None if value is None or any(c in value for c in "*?[") else value
    return "".join(_literal(p.text) if p.quoted else p.text for p in word.parts)


def _literal(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def case_branch(subject: Word | None, patterns: list[list[Word]], expand: Expand) -> int | None:
    """The index of the case body that runs (len(patterns) for none), when certain."""
    if subject is None:
        return None
    value = _one(subject, expand)
    if value is None:
        return None
    for k, alternatives in enumerate(patterns):
        for word in alternatives:
            pattern = _pattern(word, expand)
            if pattern is None:
                return None
            if fnmatch.fnmatchcase(value, pattern):
                return k
    return len(patterns)
