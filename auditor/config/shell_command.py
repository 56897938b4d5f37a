"""Whether a call that runs a command line (`os.system("cp -rf /tmp/a /tmp/b")`,
`subprocess.run(["mkdir", "-p", "out"])`) runs only a file utility: the callee is one of
rules/stacks.toml `[no_pipeline] command_runners` (os.system, subprocess.*: never exec, eval,
runpy or a process starter), its program is one of `inert_programs` (cp, mkdir, ...), and the
whole command is literal: a shell string with no shell operator, or an argv list of literal
strings. A piece computed at run time (`"cp " + src`, `f"cp {src} {dst}"`) may hold `; torchrun
...`, so it is not read as inert; nor is a call given `runner_keywords` (`executable=`,
`preexec_fn=`) or `**kwargs`, which run another program or Python. Such an inert call runs no
Python and starts no rank, so it neither hides a pipeline (entry_stack.runs_code) nor makes a
one-process run more (config.one_process). Anything else stays a call that runs code unseen.
"""

from __future__ import annotations

import ast
import re

from auditor import rulebook
from auditor.config.entry_script import calls

_OPERATOR = re.compile(r"[;&|`\n<>]|\$\(")


def runs_only_utility(call: ast.Call, callee: str) -> bool:
    """Whether `call` of `callee` (its dotted name through the file's import aliases) runs a
    literal command line or argv whose program is an inert one."""
    rules = rulebook.load("stacks").data["no_pipeline"]
    if callee not in rules.get("command_runners", []) or not call.args:
        return False
    if any(k.arg is None or k.arg in rules.get("runner_keywords", []) for k in call.keywords):
        return False
    programs = rules.get("inert_programs", [])
    command = call.args[0]
    if isinstance(command, (ast.List, ast.Tuple)):
        argv = [_literal(e) for e in command.elts]
        return bool(argv) and None not in argv and argv[0] in programs
    text = _literal(command)
    if text is None or _OPERATOR.search(text):
        return False
    words = text.split()
    return bool(words) and words[0] in programs


def _literal(node: ast.expr) -> str | None:
    """The text of a string every piece of which is literal (a constant, `+` of constants, an
    f-string with no placeholder); None where any piece is computed at run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = [_literal(v) for v in node.values]
        return None if None in parts else "".join(p for p in parts if p is not None)
    return None


def starts_programs(tree: ast.Module) -> list[tuple[ast.Call, str]]:
    """The calls of the file that start a process running another program (rules/stacks.toml
    `command_runners`: subprocess.*, os.system/exec*/spawn*, asyncio's create_subprocess_*,
    pty.spawn), by the name written or imported (`import subprocess as sp; sp.run(...)`, `from
    subprocess import run`, `run = subprocess.run`: entry_script.calls), each with its callee as
    written; but a literal command line of a file utility, `os.system("mkdir -p out")`, which
    runs none (`runs_only_utility`). The one reader of "this code runs a command"."""
    runners = set(rulebook.load("stacks").data["no_pipeline"].get("command_runners", []))
    return [(node, written) for node, written, imported in calls(tree)
            if (written in runners or imported in runners) and not runs_only_utility(node, imported)]
