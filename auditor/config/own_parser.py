"""Which argparse parser a training script really builds where it calls a parser entry by name
(`pretrain`, `parse_args`) that is not bound from Megatron-LM's modules: the calls are followed
through the script's imports from its own checkout to the function that builds an
`ArgumentParser`. DeepSpeedExamples@83757d9c93 training/DeepSpeed-Domino/pretrain_llama.py calls
`initialize_domino` (domino/initialize.py), which calls domino/arguments.py's `parse_args`: that
parser, not the checkout's megatron/arguments.py, is what rejects a flag."""

from __future__ import annotations

import ast
from pathlib import Path

_DEPTH = 4  # calls followed from the script before giving up (no parser claimed)


def built_parsers(tree: ast.Module, script: Path, calling: list[ast.AST] | None = None) -> set[Path]:
    """The files (of the script's own checkout) whose functions, reached from what `script`
    calls through its imports, build an `ArgumentParser` and parse the command line with it;
    empty where none is reached. `calling` gets each function (and the script) whose calls were
    followed: how they call the parser (`ignore_unknown_args=True`) is theirs to say."""
    return _follow(tree, tree, script, _DEPTH, set(), calling if calling is not None else [])


def _follow(scope: ast.AST, module: ast.Module, path: Path, depth: int, seen: set[tuple[Path, str]],
            calling: list[ast.AST]) -> set[Path]:
    calling.append(scope)
    called = {c.func.id for c in ast.walk(scope) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    out: set[Path] = set()
    for node in ast.walk(module):
        if not isinstance(node, ast.ImportFrom):
            continue
        file = _module_file(path, node)
        for alias in node.names:
            if file is None or (alias.asname or alias.name) not in called or (file, alias.name) in seen:
                continue
            seen.add((file, alias.name))
            tree = _parsed(file)
            body = next((n for n in (tree.body if tree else []) if isinstance(n, ast.FunctionDef)
                         and n.name == alias.name), None)
            if body is None or tree is None:
                continue
            if _parses_command_line(body):
                out.add(file)
            elif depth > 1:
                out |= _follow(body, tree, file, depth - 1, seen, calling)
    return out


def _parses_command_line(function: ast.FunctionDef) -> bool:
    """Whether `function` builds an `ArgumentParser` and parses the command line with it
    strictly: `parse_args()` reading sys.argv (no words given, or `None`, or sys.argv's). A parser
    given its own list (`parse_args([])`, defaults read from a throwaway parser) or parsed with
    `parse_known_args` rejects no flag of the run (review r43-scan-flags: a helper's
    `ArgumentParser().parse_args([])` was taken for the run's parser, a false DOES NOT START)."""
    calls = [c for c in ast.walk(function) if isinstance(c, ast.Call)]
    if not any(_name(c.func) == "ArgumentParser" for c in calls):
        return False
    return any(_name(c.func) == "parse_args" and _reads_argv(c) for c in calls)


def parse_line(tree: ast.AST | None) -> int | None:
    """The line of the first `parse_args()` of `tree` that parses the command line (sys.argv):
    where argparse rejects a flag its parser lacks; None where there is none."""
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call)] if tree is not None else []
    return min((c.lineno for c in calls if _name(c.func) == "parse_args" and _reads_argv(c)), default=None)


def _reads_argv(call: ast.Call) -> bool:
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "args"), None)
    if given is None or (isinstance(given, ast.Constant) and given.value is None):
        return True
    return "sys.argv" in ast.unparse(given)


def _name(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _module_file(importer: Path, node: ast.ImportFrom) -> Path | None:
    """The file of the checkout an import names (`from domino.arguments import ...`, or a
    relative one), looked up from the importer's directory up; None for another package's."""
    parts = (node.module or "").split(".") if node.module else []
    if node.level:
        bases = [importer.parents[node.level - 1]] if node.level <= len(importer.parents) else []
    else:
        bases = [importer.parent, *list(importer.parent.parents)[:3]]
    for base in bases:
        for candidate in (base.joinpath(*parts).with_suffix(".py") if parts else None,
                          base.joinpath(*parts, "__init__.py")):
            if candidate is not None and candidate.is_file():
                return candidate.resolve()
    return None


def _parsed(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None
