"""The Interpreter is four parts over a shared core (auditor/static/interp/, split as mypy splits
its checker): each method is defined in exactly one part, so the order the parts are composed in
decides nothing (a second definition would silently win or lose by the MRO), and every method the
core declares for the parts to call on each other is defined by one of them."""

from __future__ import annotations

import inspect

from auditor.static.interp import attributes, calls, expressions, shared, statements
from auditor.static.interp.callgraph import Interpreter
from auditor.static.interp.state import Frame, State

PARTS = (statements.Statements, expressions.Expressions, attributes.Attributes, calls.Calls)


def clashes(classes: tuple[type, ...]) -> list[str]:
    """Methods (and properties) that more than one of `classes` defines itself."""
    owner: dict[str, str] = {}
    found = []
    for cls in classes:
        for name, value in vars(cls).items():
            if not (inspect.isfunction(value) or isinstance(value, property)):
                continue
            if getattr(value, "__isabstractmethod__", False):
                continue  # a declaration in the core, defined by a part
            if name in owner:
                found.append(f"{name}: {owner[name]} and {cls.__name__}")
            owner[name] = cls.__name__
    return found


def test_the_interpreter_composes_the_four_parts():
    assert Interpreter.__bases__ == PARTS
    assert all(issubclass(part, shared.InterpreterCore) for part in PARTS)


def test_no_method_is_defined_twice():
    assert clashes((shared.InterpreterCore, *PARTS, Interpreter)) == []


def test_every_declared_method_is_defined_by_one_part():
    assert not Interpreter.__abstractmethods__
    for name in shared.InterpreterCore.__abstractmethods__:
        assert [p.__name__ for p in PARTS if name in vars(p)] != [], name
        assert len([p for p in PARTS if name in vars(p)]) == 1, name


def test_a_part_redefining_anothers_method_is_a_clash():
    """INVALID: a statements part that evaluates expressions itself."""

    class Shadow(statements.Statements):
        def eval(self, e, state: State, frame: Frame) -> frozenset:
            return frozenset()

    assert clashes((*PARTS, Shadow)) == ["eval: Expressions and Shadow"]
