"""The rules' expression language: Python syntax, evaluated safely and three-valued.

Rules are data written by people reading framework code; evaluating them must neither run
arbitrary code nor guess. Expressions are parsed with `ast` and walked over a whitelist of node
types: names are config keys, `env.NAME` is the launch script's environment, `unknown` is the
third truth value, and an unknown operand makes what depends on it unknown (Kleene logic).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from auditor.config.hybrid import hybrid_layers, hybrid_segments
from auditor.config.layout import layout_stages
from auditor.errors import InputError


class _Unknown:
    """The third truth value. Using it as a plain bool is a bug, so that raises."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "unknown"

    def __bool__(self) -> bool:
        raise TypeError("unknown has no truth value; test `is UNKNOWN` first")


UNKNOWN: Any = _Unknown()


class RuleError(InputError):
    """A rules entry that cannot be evaluated: exit 2 naming the file, entry and cause."""

    def __init__(self, cause: str, subject: str = "rules") -> None:
        super().__init__(subject, cause)


_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.BinOp,
    ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Compare, ast.Eq, ast.NotEq, ast.Lt,
    ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.Name, ast.Load,
    ast.Constant, ast.IfExp, ast.Tuple, ast.Attribute, ast.Call,
)
# Functions a rule may call, by name (`layout_stages(pipeline_model_parallel_layout)`): each
# computes what a framework computes from one setting; None from one is unknown.
FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "layout_stages": layout_stages, "hybrid_layers": hybrid_layers, "hybrid_segments": hybrid_segments}


@dataclass(frozen=True)
class Expr:
    text: str
    tree: ast.Expression = field(repr=False, compare=False)

    def names(self) -> list[str]:
        """Config keys the expression reads, in order of appearance."""
        seen: list[str] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id not in ("unknown", "env", *FUNCTIONS) and node.id not in seen:
                seen.append(node.id)
        return seen

    def env_names(self) -> list[str]:
        return [n.attr for n in ast.walk(self.tree)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)]


def compile_expr(text: str) -> Expr:
    """Parse and whitelist once, so a bad rule fails at load time naming the expression."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise RuleError(f"expression {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise RuleError(f"expression {text!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Attribute) and not (
            isinstance(node.value, ast.Name) and node.value.id == "env"
        ):
            raise RuleError(f"expression {text!r}: only env.NAME attributes are allowed")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and len(node.args) == 1 and not node.keywords
        ):
            raise RuleError(f"expression {text!r}: only one-argument calls of {sorted(FUNCTIONS)} are allowed")
    return Expr(text.strip(), tree)


def evaluate(expr: Expr, lookup: Callable[[str], Any], env: Callable[[str], Any]) -> Any:
    """Kleene logic over config values; any unknown operand of an operator gives unknown."""
    return _eval(expr.tree.body, lookup, env)


def _eval(node: ast.AST, lookup: Callable[[str], Any], env: Callable[[str], Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return UNKNOWN if node.id == "unknown" else lookup(node.id)
    if isinstance(node, ast.Attribute):
        return env(node.attr)
    if isinstance(node, ast.Tuple):
        items = tuple(_eval(e, lookup, env) for e in node.elts)
        return UNKNOWN if any(i is UNKNOWN for i in items) else items
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, lookup, env)
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, lookup, env)
        if v is UNKNOWN:
            return UNKNOWN
        return (not v) if isinstance(node.op, ast.Not) else -v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, lookup, env), _eval(node.right, lookup, env)
        if a is UNKNOWN and isinstance(node.op, ast.Mod) and type(b) is int and b == 1:
            return 0  # every integer is a multiple of 1: TP=1 divides any head count
        if a is UNKNOWN or b is UNKNOWN or a is None or b is None:
            return UNKNOWN
        try:
            return _BINOPS[type(node.op)](a, b)
        except (ZeroDivisionError, TypeError):
            return UNKNOWN
    if isinstance(node, ast.Compare):
        left = _eval(node.left, lookup, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, lookup, env)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            try:
                ok = _COMPARE[type(op)](left, right)
            except TypeError:
                return UNKNOWN
            if not ok:
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        arg = _eval(node.args[0], lookup, env)
        result = UNKNOWN if arg is UNKNOWN else FUNCTIONS[node.func.id](arg)  # type: ignore[attr-defined]
        return UNKNOWN if result is None else result
    if isinstance(node, ast.IfExp):
        test = _eval(node.test, lookup, env)
        if test is UNKNOWN:
            a, b = _eval(node.body, lookup, env), _eval(node.orelse, lookup, env)
            return a if (a is not UNKNOWN and b is not UNKNOWN and a == b) else UNKNOWN
        return _eval(node.body if test else node.orelse, lookup, env)
    raise RuleError(f"cannot evaluate {type(node).__name__}")  # unreachable after compile_expr


def _bool_op(node: ast.BoolOp, lookup, env) -> Any:
    is_and = isinstance(node.op, ast.And)
    saw_unknown = False
    last: Any = None
    for operand in node.values:
        last = _eval(operand, lookup, env)
        if last is UNKNOWN:
            saw_unknown = True
        elif bool(last) is not is_and:  # a known False under `and`, a known True under `or`
            return last
    return UNKNOWN if saw_unknown else last


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}


def and3(a: Any, b: Any) -> Any:
    """`a and b` three-valued, as a rule's `when` combines with a default's "key is None"."""
    if a is False or b is False:
        return False
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    return bool(a) and bool(b)


def show(value: Any) -> str:
    """A value as a provenance sentence or message shows it."""
    return "unknown" if value is UNKNOWN else repr(value) if isinstance(value, str) else str(value)


_BRACES = re.compile(r"\{([^{}]+)\}")


def interpolate(text: str, lookup: Callable[[str], Any], env: Callable[[str], Any]) -> str:
    """`{expr}` in a message or provenance sentence, evaluated over the config."""
    def one(m: re.Match[str]) -> str:
        value = evaluate(compile_expr(m.group(1)), lookup, env)
        return value if isinstance(value, str) else show(value)
    return _BRACES.sub(one, text)
