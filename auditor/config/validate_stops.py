"""Flags a Megatron-LM parser accepts and its `validate_args` then refuses: the run ends before
it trains.

A spelling check passes `--checkpoint-activations` wherever the parser defines it, but many
releases keep such a flag only to refuse it: bigcode-project/Megatron-LM@7c325cd34a
megatron/arguments.py defines it (:804) and validate_args prints and calls `exit()` on it
(:134-138); NVIDIA/Megatron-LM d98e8a64dd megatron/training/arguments.py asserts
`args.model_parallel_size is None` (:597). Megatron-DeepSpeed f4157bea69 keeps
`--checkpoint-activations` (no stop in its validate_args), so the stops are read from the arguments
file the front end's parser was read from (config/frontend_parser.py), never from a table.

Only statements directly in validate_args's body are stops, and only those no earlier statement
can undo: `assert args.D is None` / `assert not args.D`, and `if args.D:` / `if args.D is not None:`
(no else) whose body ends the process at its top level (`exit()`, `sys.exit()`, `raise`). A stop
is reached only where the entry calls what runs validate_args in that checkout (`runners`); a flag
that may skip or change its input (rules/megatron-lm.toml [validate_stops] `bypass`: `--yaml-cfg`,
`--use-checkpoint-args`), a value not known, or a branch not decided leaves it undecided.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.bash.values import Symbolic
from auditor.config.flags import STARTUP
from auditor.config.frontend_parser import PARSER_FILES, FrontEnd
from auditor.config.model import Flag, LaunchConfig
from auditor.config.parser_entry import calls_parser_entry
from auditor.findings import Finding

_ENDS = frozenset({"exit", "quit"})  # the builtins; `sys.exit` is read by its module (_ends)


@dataclass(frozen=True)
class Stop:
    """`dest` ends validate_args at `where` (`path:line`): when given at all (`given`), or when
    truthy (`truthy`)."""

    dest: str
    given: bool
    where: str
    code: str


@functools.cache
def _rule() -> dict[str, Any]:
    rule: dict[str, Any] = rulebook.load("megatron-lm").data["validate_stops"]
    return rule


@functools.lru_cache(maxsize=16)
def stops(parser: Path) -> tuple[Stop, ...]:
    """The stops of the `validate_args` that `parser` (an arguments file) defines at top level."""
    try:
        tree = ast.parse(parser.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return ()
    func = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == _rule()["validator"]), None)
    if func is None or not func.args.args:
        return ()
    args = func.args.args[0].arg
    found: list[Stop] = []
    written: set[str] = set()  # dests an earlier statement may set
    for stmt in func.body:
        stop = _stop(stmt, args)
        if stop is not None and stop[0] not in written:
            found.append(Stop(stop[0], stop[1], f"{parser}:{stmt.lineno}", _first_line(stmt)))
        changed = _changes(stmt, args)
        if changed is None:
            break  # `args` replaced, set by a name not read, or validate_args may return here
        written |= changed
    return tuple(found)


def _first_line(stmt: ast.stmt) -> str:
    return ast.unparse(stmt).splitlines()[0]


def _dest(node: ast.expr, args: str) -> str | None:
    """`D` of `args.D`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == args:
        return node.attr
    return None


def _test(node: ast.expr, args: str, stops_when_none: bool) -> tuple[str, bool] | None:
    """(D, given) where `node` fails (an assert: `stops_when_none`) or holds (an if) exactly when
    D is given (`args.D is None` / `is not None`) or truthy (`not args.D` / `args.D`)."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant) \
            and node.comparators[0].value is None and (dest := _dest(node.left, args)) is not None:
        op = ast.Is if stops_when_none else ast.IsNot
        return (dest, True) if isinstance(node.ops[0], op) else None
    if stops_when_none:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and (dest := _dest(node.operand, args)):
            return dest, False
        return None
    return (dest, False) if (dest := _dest(node, args)) is not None else None


def _stop(stmt: ast.stmt, args: str) -> tuple[str, bool] | None:
    if isinstance(stmt, ast.Assert):
        return _test(stmt.test, args, stops_when_none=True)
    if isinstance(stmt, ast.If) and not stmt.orelse and any(_ends(s) for s in stmt.body):
        return _test(stmt.test, args, stops_when_none=False)
    return None


def _ends(stmt: ast.stmt) -> bool:
    """`raise ...`, `exit()` or `sys.exit(...)` as a statement of its own."""
    if isinstance(stmt, ast.Raise):
        return True
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    return (isinstance(func, ast.Name) and func.id in _ENDS) or (
        isinstance(func, ast.Attribute) and func.attr == "exit" and isinstance(func.value, ast.Name)
        and func.value.id == "sys")


def _changes(stmt: ast.stmt, args: str) -> set[str] | None:
    """The dests `stmt` may set (`args.D = ...`, `setattr(args, "D", ...)`); None where it may set
    any (`setattr` by a name not literal, `vars(args)`, `args` bound anew) or may return."""
    changed: set[str] = set()
    for node in _walk(stmt):
        if isinstance(node, ast.Return):
            return None
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.For, ast.With)):
            targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else
                       [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)) else
                       [i.optional_vars for i in node.items if i.optional_vars is not None])
            for target in (t for top in targets for t in ast.walk(top)):
                if isinstance(target, ast.Name) and target.id == args and isinstance(target.ctx, ast.Store):
                    return None
                if (dest := _dest(target, args)) is not None:  # type: ignore[arg-type]
                    changed.add(dest)
        if isinstance(node, ast.NamedExpr) and node.target.id == args:
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id == args:
            if node.func.id == "vars":
                return None
            if node.func.id == "setattr":
                name = node.args[1] if len(node.args) > 1 else None
                if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                    return None
                changed.add(name.value)
    return changed


def _walk(node: ast.AST) -> list[ast.AST]:
    """`node` and what it holds, not the bodies of functions or classes it defines (they do not
    run here)."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out.append(n)
        if n is node or not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(n))
    return out


@functools.lru_cache(maxsize=16)
def runners(package: Path) -> frozenset[str]:
    """The names of the functions of `package` (the checkout's `megatron/` or `megatron/training/`
    modules, top level) that call validate_args, or call such a function: read from the checkout,
    since releases differ (bigcode's and NVIDIA 0d7e02bd26's initialize_megatron runs it, so
    `pretrain` does; d98e8a64dd's initialize_megatron reads args already parsed, and only
    parse_and_validate_args (megatron/training/arguments.py:88-108) runs it)."""
    bodies: dict[str, list[set[str]]] = {}
    for module in sorted(package.glob("*.py")):
        try:
            tree = ast.parse(module.read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue
        for func in (s for s in tree.body if isinstance(s, ast.FunctionDef)):
            bodies.setdefault(func.name, []).append(
                {str(getattr(c.func, "attr", getattr(c.func, "id", ""))) for c in _walk(func) if isinstance(c, ast.Call)})
    found = {str(_rule()["validator"])}
    while grown := {name for name, called in bodies.items() if name not in found and any(c & found for c in called)}:
        found |= grown
    return frozenset(found)


def reaches(script: Path, front: FrontEnd) -> tuple[bool, frozenset[str] | None]:
    """Whether `script` calls, bound from Megatron-LM's modules, what runs the checkout's
    validate_args (`runners`), and the keys of the `args_defaults` it passes (None: not a literal
    dict, so any)."""
    try:
        tree = ast.parse(script.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return False, None
    names = runners(Path(front.path).parent)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "attr", getattr(n.func, "id", None)) in names]
    if not calls or not calls_parser_entry(script):
        return False, None
    keys: set[str] = set()
    for call in calls:
        for k in call.keywords:
            if k.arg is None:
                return True, None  # `**kwargs`: args_defaults may be among them
            if k.arg == "args_defaults":
                if not isinstance(k.value, ast.Dict) or not all(
                        isinstance(key, ast.Constant) and isinstance(key.value, str) for key in k.value.keys):
                    return True, None
                keys |= {str(key.value) for key in k.value.keys if isinstance(key, ast.Constant)}
    return True, frozenset(keys)


def check_stops(config: LaunchConfig, front: FrontEnd, script: Path, path: str) -> None:
    """Each flag the command gives that a stop of the checkout's validate_args refuses: the run
    does not start where it is given on every path with a value known to stop it; undecided
    where it may be, or where something before validate_args may change it."""
    if front.root is None or Path(front.path) not in {front.root / p for p in PARSER_FILES}:
        return  # a release's files (no entry read), or a parser of the script's own
    reached, defaults = reaches(script, front)
    if not reached:
        return
    bypass = [f for f in (config.flags.get(d) for d in _rule()["bypass"]) if f is not None]
    for stop in stops(Path(front.path)):
        flag = config.flags.get(stop.dest)
        if flag is None or flag.spelling not in front.flags or (defaults is not None and stop.dest in defaults) or (
                not stop.given and flag.value is False):
            continue
        sure = _stops(flag, stop)
        if sure and not bypass and defaults is not None:
            config.diagnostics.append(Finding(
                "launch.validate-stop", "error",
                f"`{flag.spelling}` ends the run before it trains: {stop.where} validate_args "
                f"`{stop.code}` refuses it", fix=f"drop `{flag.spelling}`", where=f"{path}:{flag.line}",
                detail={**STARTUP, "flag": flag.spelling, "source": stop.where}))
            continue
        why = ("it is given only on a branch not decided here" if flag.maybe else
               f"whether its value `{flag.value}` is {'given' if stop.given else 'true'} is not known here"
               if not sure else
               f"{' and '.join(f.spelling for f in bypass)} may change what validate_args reads"
               if bypass else "the entry's args_defaults are not read")
        config.diagnostics.append(Finding(
            "launch.validate-stop", "warning",
            f"`{flag.spelling}` may end the run before it trains: {stop.where} validate_args "
            f"`{stop.code}` refuses it, and {why}", where=f"{path}:{flag.line}",
            detail={"flag": flag.spelling, "source": stop.where,
                    "undecided": f"whether {flag.spelling} reaches {stop.where} ({why})",
                    "decide": f"the flag {flag.spelling} ({path}:{flag.line})"}))


def _stops(flag: Flag, stop: Stop) -> bool:
    """Whether the flag as given surely meets the stop's test."""
    if flag.maybe or isinstance(flag.value, Symbolic):
        return False
    if stop.given or flag.value is True:
        return True
    text = str(flag.value).strip().lower()
    try:
        return float(text) != 0
    except ValueError:
        return False
