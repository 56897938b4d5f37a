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
`--use-checkpoint-args`), a value not known, or a branch not decided leaves it undecided; so does
an entry that rewrites sys.argv or may change the arguments it parsed before it hands them on
(review r46-c). A function validate_args hands `args` to before a stop may set any of them,
unless read one step and found not to.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor import rulebook
from auditor.bash.values import Symbolic
from auditor.config.entry_script import parsed
from auditor.config.flags import STARTUP
from auditor.config.frontend_parser import PARSER_FILES, FrontEnd
from auditor.config.model import Flag, LaunchConfig
from auditor.config.parser_entry import calls_parser_entry, entry_calls
from auditor.config.script_run import writes_argv
from auditor.findings import Finding
from auditor.config.located import shown

_ENDS = frozenset({"exit", "quit"})  # the builtins; `sys.exit` is read by its module (_ends)
_READS = frozenset({"getattr", "hasattr", "isinstance", "print", "len", "repr", "str", "type"})  # builtins that read


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
def stops(parser: Path, root: Path | None = None) -> tuple[Stop, ...]:
    """The stops of the `validate_args` that `parser` (an arguments file of the checkout at
    `root`) defines at top level."""
    tree = _tree(parser)
    func = _function(tree, _rule()["validator"]) if tree is not None else None
    if tree is None or func is None or not func.args.args:
        return ()
    args = func.args.args[0].arg
    found: list[Stop] = []
    written: set[str] = set()  # dests an earlier statement may set
    for stmt in func.body:
        stop = _stop(stmt, args)
        if stop is not None and stop[0] not in written:
            found.append(Stop(stop[0], stop[1], f"{shown(parser, root)}:{stmt.lineno}", _first_line(stmt)))
        changed = _changes(stmt, args, functools.partial(_callee_sets, parser, tree, root))
        if changed is None:
            break  # `args` replaced, set by a name not read, or validate_args may return here
        written |= changed
    return tuple(found)


def _tree(path: Path) -> ast.Module | None:
    """`path` parsed through the one cache the front-end parser reads the same file with."""
    try:
        return parsed(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name), None)


def _callee_sets(parser: Path, tree: ast.Module, root: Path | None, name: str) -> set[str] | None:
    """The dests the function `name`, called with validate_args's `args`, may set, read one step:
    defined at top level in `parser`'s module or imported into it from a module of the checkout
    (NVIDIA/Megatron-LM 0d7e02bd26 megatron/training/arguments.py:369 `update_use_dist_ckpt(args)`
    from megatron/training/utils.py:626). Whatever it passes `args` on to, or a function not read:
    None (it may set any)."""
    func = _defined(parser, tree, root, name, hops=3)
    if func is None or not func.args.args:
        return None
    param = func.args.args[0].arg
    written: set[str] = set()
    for node in _walk(func):
        if isinstance(node, ast.Return):
            continue  # ends the callee only
        changed = _sets(node, param, lambda _: None)
        if changed is None:
            return None
        written |= changed
    return written


def _defined(file: Path, tree: ast.Module, root: Path | None, name: str, hops: int) -> ast.FunctionDef | None:
    """The top-level function `name` of `file`'s module, or of the checkout's module it imports it
    from, through at most `hops` re-exports (d98e8a64dd megatron/training/utils/__init__.py:23
    re-exports common_utils.py:580 update_use_dist_ckpt)."""
    if (func := _function(tree, name)) is not None or hops == 0:
        return func
    source = next((n for n in tree.body if isinstance(n, ast.ImportFrom)
                   and any(a.name == name and a.asname is None for a in n.names)), None)
    base = None if source is None else file.parent if source.level else root
    if source is None or base is None:
        return None
    for _ in range(max(source.level - 1, 0)):
        base = base.parent
    module = base.joinpath(*(source.module or "").split(".")) if source.module else base
    for other in (module.with_suffix(".py"), module / "__init__.py"):
        if other.is_file() and (found := _tree(other)) is not None:
            return _defined(other, found, root, name, hops - 1)
    return None


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


def _changes(stmt: ast.stmt, args: str, callee: Callable[[str], set[str] | None]) -> set[str] | None:
    """The dests `stmt` may set (`args.D = ...`, `setattr(args, "D", ...)`, a function it hands
    `args` to that `callee` reads); None where it may set any or may return."""
    changed: set[str] = set()
    for node in _walk(stmt):
        found = None if isinstance(node, ast.Return) else _sets(node, args, callee)
        if found is None:
            return None
        changed |= found
    return changed


def _sets(node: ast.AST, args: str, callee: Callable[[str], set[str] | None]) -> set[str] | None:
    """The dests the one node `node` may set; None where it may set any: `args` bound anew,
    `vars(args)`, `args.__dict__`, `setattr` by a name not literal, or `args` handed to a function
    `callee` does not read (one that only reads, `_READS`, sets none)."""
    changed: set[str] = set()
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
    if isinstance(node, ast.Attribute) and node.attr == "__dict__" and _dest(node, args):
        return None
    if isinstance(node, ast.Call) and any(isinstance(a, ast.Name) and a.id == args
                                          for a in [*node.args, *(k.value for k in node.keywords)]):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name == "setattr" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == args:
            key = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            changed.add(key.value)
        elif name not in _READS:
            found = callee(name) if name is not None and name != "vars" else None
            if found is None:
                return None
            changed |= found
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
        if (tree := _tree(module)) is None:
            continue
        for func in (s for s in tree.body if isinstance(s, ast.FunctionDef)):
            bodies.setdefault(func.name, []).append(
                {str(getattr(c.func, "attr", getattr(c.func, "id", ""))) for c in _walk(func) if isinstance(c, ast.Call)})
    found = {str(_rule()["validator"])}
    while grown := {name for name, called in bodies.items() if name not in found and any(c & found for c in called)}:
        found |= grown
    return frozenset(found)


@dataclass(frozen=True)
class Reach:
    """How the entry reaches validate_args: the dests it sets first (`args_defaults` keys, `args.D
    = ...`; None: any may be), and why the command line may not be what it reads ("" none)."""

    set_first: frozenset[str] | None
    unsure: str


def reaches(script: Path, front: FrontEnd) -> Reach | None:
    """How `script` calls, bound from Megatron-LM's modules, what runs the checkout's validate_args
    (`runners`); None where it does not."""
    tree = _tree(script)
    if tree is None:
        return None
    names = runners(Path(front.path).parent)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "attr", getattr(n.func, "id", None)) in names]
    if not calls or not calls_parser_entry(script):
        return None
    keys: set[str] | None = set()
    unsure = f"{script.name} rewrites sys.argv first" if writes_argv(tree) else ""
    for call in calls:
        given = list(call.keywords)
        if getattr(call.func, "attr", getattr(call.func, "id", None)) == _rule()["validator"] and len(call.args) > 1:
            given.append(ast.keyword(arg="args_defaults", value=call.args[1]))  # validate_args(args, defaults)
        for k in given:
            if k.arg is None:
                keys = None  # `**kwargs`: args_defaults may be among them
            elif k.arg == "args_defaults":
                if not isinstance(k.value, ast.Dict) or not all(
                        isinstance(key, ast.Constant) and isinstance(key.value, str) for key in k.value.keys):
                    keys = None
                elif keys is not None:
                    keys |= {str(key.value) for key in k.value.keys if isinstance(key, ast.Constant)}
        found = _handed(tree, call, script.name)
        if isinstance(found, str):
            unsure = unsure or found
        elif keys is not None:
            keys |= found
    return Reach(None if keys is None else frozenset(keys), unsure)


def _handed(tree: ast.Module, call: ast.Call, name: str) -> set[str] | str:
    """The dests the entry sets on the parsed arguments it hands `call` (`args = parse_args();
    args.D = False; validate_args(args)`, or 0d7e02bd26's `initialize_megatron(parsed_args=args)`,
    megatron/training/initialize.py:62-65), or why they may not be the command line's: bound other
    than by a parser entry, or changed before by a name not read (setattr, `vars`, `__dict__`, a
    function they are handed to)."""
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    own |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
            if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    scope: ast.AST = next((f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and any(c is call for c in _walk(f))), tree)
    validator = getattr(call.func, "attr", getattr(call.func, "id", None)) == _rule()["validator"]
    handed = {a.id for a in [*call.args[:1 if validator else 0],
                             *(k.value for k in call.keywords if k.arg in _rule()["handed"])]
              if isinstance(a, ast.Name) and a.id not in own}
    written: set[str] = set()
    for arg in sorted(handed):
        parsed = False
        for node in sorted((n for n in _walk(scope) if getattr(n, "lineno", call.lineno) < call.lineno),
                           key=lambda n: getattr(n, "lineno", 0)):
            if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [arg] \
                    and isinstance(node.value, ast.Call) \
                    and getattr(node.value.func, "attr", getattr(node.value.func, "id", None)) in entry_calls():
                parsed, written = True, set()  # the command line's, read anew
                continue
            found = None if isinstance(node, ast.Return) else _sets(node, arg, lambda _: None)
            if found is None:
                return f"{name}:{getattr(node, 'lineno', '?')} may change `{arg}` before {ast.unparse(call.func)} reads it"
            written |= found
        if not parsed:
            return f"{name} hands {ast.unparse(call.func)} `{arg}` not read from parse_args here"
    return written


def check_stops(config: LaunchConfig, front: FrontEnd, script: Path, path: str) -> None:
    """Each flag the command gives that a stop of the checkout's validate_args refuses: the run
    does not start where it is given on every path with a value known to stop it; undecided
    where it may be, or where something before validate_args may change it."""
    if front.root is None or Path(front.path) not in {front.root / p for p in PARSER_FILES}:
        return  # a release's files (no entry read), or a parser of the script's own
    reach = reaches(script, front)
    if reach is None:
        return
    defaults = reach.set_first
    bypass = [f for f in (config.flags.get(d) for d in _rule()["bypass"]) if f is not None]
    for stop in stops(Path(front.path), front.root):
        flag = config.flags.get(stop.dest)
        if flag is None or flag.spelling not in front.flags or (defaults is not None and stop.dest in defaults):
            continue
        sure = _stops(flag, stop, front.flags[flag.spelling])
        if sure is False:
            continue
        if sure and not bypass and defaults is not None and not reach.unsure:
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
               if bypass else reach.unsure or "the entry's args_defaults are not read")
        config.diagnostics.append(Finding(
            "launch.validate-stop", "warning",
            f"`{flag.spelling}` may end the run before it trains: {stop.where} validate_args "
            f"`{stop.code}` refuses it, and {why}", where=f"{path}:{flag.line}",
            detail={"flag": flag.spelling, "source": stop.where,
                    "undecided": f"whether {flag.spelling} reaches {stop.where} ({why})",
                    "decide": f"the flag {flag.spelling} ({path}:{flag.line})"}))


def _stops(flag: Flag, stop: Stop, parsed: dict[str, Any]) -> bool | None:
    """Whether the flag as given surely meets the stop's test (True), surely does not (False), or
    may (None): a value's truth is read as the parser's `type` makes it (`--num-layers 0` with
    type=int is false; a `str` value is true when not empty)."""
    if flag.maybe or isinstance(flag.value, Symbolic):
        return None
    if stop.given or flag.value is True:
        return True
    if flag.value is False:
        return False
    text, kind = str(flag.value), parsed.get("type")
    if kind == "str":
        return text != ""
    try:
        number = float(text.strip())
    except ValueError:
        return None
    if kind in ("int", "float"):
        return number != 0
    return True if number != 0 and kind is None else None  # a type not read: only a nonzero number is surely true
