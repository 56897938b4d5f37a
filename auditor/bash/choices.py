"""An if/case whose test the walk cannot decide (`if [ "$1" = convert ]`, `case "$MODE" in`), as
a choice a later walk can be told to make: the script run once per way it can go, where the
merged walk cannot follow what the branches set (a command string run by `eval "$cmd"`).

Two tests written alike choose alike: a script that tests `"$1"` twice, once for a config file
and once for the command, takes the same branch both times, so the choice is keyed by its text."""

from __future__ import annotations

from dataclasses import dataclass

from auditor.bash.parser import AndOr, Branches, Cmd, Node, Pipeline


@dataclass(frozen=True)
class Choice:
    """One undecided if/elif chain (from its first undecided test) or case."""

    key: str  # the test as written: statements written alike are one choice
    line: int
    test: str  # what is tested, for a message (`[ "$1" = "convert_hf2mds" ]`)
    options: int  # its branches, and running none of them where no branch surely runs


def if_choice(node: Branches, k: int) -> Choice | None:
    """The choice an if chain makes from its test k on; None where a test is no simple command
    list (its text would not say what it tests)."""
    tests = [_text(c) for c in node.conditions[k:] if c]
    if any(t is None for t in tests) or not tests:
        return None
    key = "if " + " ; elif ".join(str(t) for t in tests) + (" ; else" if node.exhaustive else "")
    options = len(node.bodies) - k + (0 if node.exhaustive else 1)
    return Choice(key, node.line, str(tests[0]), options)


def case_choice(node: Branches) -> Choice | None:
    """The choice a case makes; None for one whose branches may run one after another (`;&`)."""
    if node.subject is None or node.fallthrough:
        return None
    patterns = " ".join("|".join(w.raw for w in words) + ")" for words in node.patterns)
    key = f"case {node.subject.raw} in {patterns}"
    options = len(node.bodies) + (0 if node.exhaustive else 1)
    return Choice(key, node.line, f"case {node.subject.raw} in", options)


def _text(nodes: list[Node] | Node) -> str | None:
    if isinstance(nodes, list):
        parts = [_text(n) for n in nodes]
        return None if any(p is None for p in parts) else " ; ".join(str(p) for p in parts)
    if isinstance(nodes, Cmd):
        return " ".join(w.raw for w in nodes.words)
    if isinstance(nodes, Pipeline):
        parts = [_text(n) for n in nodes.commands]
        return None if any(p is None for p in parts) else ("! " if nodes.negated else "") + " | ".join(
            str(p) for p in parts)
    if isinstance(nodes, AndOr):
        parts = [_text(nodes.first), *(_text(n) for _, n in nodes.rest)]
        if any(p is None for p in parts):
            return None
        return str(parts[0]) + "".join(f" {op} {p}" for (op, _), p in zip(nodes.rest, parts[1:]))
    return None
