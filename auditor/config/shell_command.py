"""Whether a call that runs a command line (`os.system("cp -rf " + src + "/*.json " + dst)`,
`subprocess.run(["mkdir", "-p", out])`) runs only a file utility: a program of rules/stacks.toml
`[no_pipeline] inert_programs` (cp, mkdir, ...), written as a literal at the head of the line,
with no shell operator in the literal text that could start a second program. Such a call runs
no Python and starts no rank, so it neither hides a pipeline (entry_stack.runs_code) nor makes
a one-process run more (config.one_process). Anything else stays a call that runs code unseen.
"""

from __future__ import annotations

import ast
import re

from auditor import rulebook

_OPERATOR = re.compile(r"[;&|`\n<>]|\$\(")


def runs_only_utility(call: ast.Call) -> bool:
    """Whether `call`'s first argument is a command line or argv whose program is an inert one."""
    if not call.args:
        return False
    head = _literal_head(call.args[0])
    if head is None:
        return False
    text, whole = head
    # the program's name is complete: the whole argv element, or followed by a blank in the literal
    word = text if whole else (m.group(1) if (m := re.match(r"\s*(\S+)\s", text)) else "")
    programs = rulebook.load("stacks").data["no_pipeline"].get("inert_programs", [])
    return word in programs and (whole or _no_operator(call.args[0]))


def _literal_head(node: ast.expr) -> tuple[str, bool] | None:
    """The literal text a command starts with, and whether it is the whole program word (an argv
    list's first element); None where it does not start with a literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal_head(node.left)
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        return (first.value, False) if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        first = node.elts[0]
        return (first.value, True) if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
    return None


def _no_operator(node: ast.expr) -> bool:
    """Whether no literal part of a command line string holds a shell operator."""
    return not any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _OPERATOR.search(n.value)
                   for n in ast.walk(node))
