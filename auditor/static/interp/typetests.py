"""`isinstance`, `issubclass`, `callable` and `hasattr` decided where the values are known.

megatron-core 0.19's `get_forward_backward_func` starts with `isinstance(schedule_pg_collection,
MultiModuleProcessGroupCollection)`; read as run-time data ("either way"), its early return of
the pipelined schedule made every pipeline site reachable at PP=1. A test is decided only where
Python's answer follows from what the interpreter knows: the value is None, a literal, a
function, a dict, or an object the program constructed, and the class is a builtin type or an
analysed class that is *closed* (every class in its hierarchy is analysed, none has a metaclass
or a base the interpreter cannot name, so none can answer `isinstance` itself). Everything else
stays unknown (`Data`), as before.
"""

from __future__ import annotations

import builtins
from typing import Any, Protocol

from auditor.static.interp.values import Cfg, ConstValue, Data, DictV, External, Func, Klass, Obj, bare, ordered

TESTS = frozenset({"isinstance", "issubclass", "callable", "hasattr"})
UNKNOWN = None  # a test the known values do not decide


class Classes(Protocol):
    """What the interpreter knows about analysed classes."""

    def mro(self, k: Klass) -> list[Klass]: ...

    def closed(self, k: Klass) -> bool: ...

    def defines(self, k: Klass, attr: str) -> bool: ...


def test_name(callee: Any) -> str | None:
    """The builtin type test `callee` is, if it is one."""
    callee = bare(callee)
    if not (isinstance(callee, External) and callee.qualname.startswith("builtins.")):
        return None
    name = callee.qualname.removeprefix("builtins.")
    return name if name in TESTS else None


def decide(name: str, args: list[frozenset], specs: list[frozenset] | None,
           classes: Classes) -> frozenset:
    """The result of `name(*args)`: ConstValue(True) and/or ConstValue(False) for the values it is decided
    for, else Data. `specs`: the class values of a tuple second argument, one set per item."""
    answers: set[bool] = set()
    if not args or (name != "callable" and len(args) != 2):
        return frozenset({Data(name)})
    # In one order every run: the first undecided value ends the test, and a value's turn may
    # import the modules of a class hierarchy (`closed`), which the walk then has run.
    for value in ordered(args[0]):
        if name == "callable":
            answer = _callable(bare(value), classes)
        elif name == "hasattr":
            answer = _hasattr(bare(value), args[1], classes)
        else:
            answer = _any_of(name, bare(value), specs if specs is not None else [args[1]], classes)
        if answer is UNKNOWN:
            return frozenset({Data(name)})
        answers.add(answer)
    return frozenset(ConstValue(a) for a in answers) or frozenset({Data(name)})


def _any_of(name: str, value: Any, specs: list[frozenset], classes: Classes) -> bool | None:
    """True if the value is an instance (subclass) of one class of the tuple, False if of none."""
    seen_false = False
    for spec in specs:
        for cls in ordered(spec):
            test = _instance if name == "isinstance" else _subclass
            answer = test(value, bare(cls), classes)
            if answer is True:
                return True
            if answer is UNKNOWN:
                return UNKNOWN
            seen_false = True
    return False if seen_false else UNKNOWN


def _builtin_type(cls: Any) -> type | None:
    if not (isinstance(cls, External) and cls.qualname.startswith("builtins.")):
        return None
    found = getattr(builtins, cls.qualname.removeprefix("builtins."), None)
    return found if isinstance(found, type) else None


def _known(value: Any) -> tuple[bool, Any]:
    if isinstance(value, ConstValue):
        return True, value.value
    if isinstance(value, Cfg) and value.known:
        return True, value.value
    return False, None


def _instance(value: Any, cls: Any, classes: Classes) -> bool | None:
    py = _builtin_type(cls)
    known, literal = _known(value)
    if known:
        if py is not None:
            return isinstance(literal, py)
        return False if isinstance(cls, Klass) and classes.closed(cls) else UNKNOWN
    if isinstance(value, Obj):
        return _subclass(value.cls, cls, classes, exact=value.where != "entry")
    if isinstance(value, (Func, DictV)):
        if py is not None:
            return py is object or (py is dict and isinstance(value, DictV))
        return False if isinstance(cls, Klass) and classes.closed(cls) else UNKNOWN
    return UNKNOWN


def _subclass(sub: Any, cls: Any, classes: Classes, exact: bool = True) -> bool | None:
    """`issubclass(sub, cls)`; `exact` False: `sub` stands for itself or any subclass of it (an
    object the entry code made from a class it names), so only True is decided."""
    py_sub, py = _builtin_type(sub), _builtin_type(cls)
    if py_sub is not None and py is not None:
        return issubclass(py_sub, py)
    if not isinstance(sub, Klass):
        return UNKNOWN
    if py is object:
        return True
    if isinstance(cls, Klass) and cls in classes.mro(sub):
        return True
    if not exact or not classes.closed(sub):
        return UNKNOWN
    if py is not None:
        return False  # a closed hierarchy holds analysed classes and object only
    return False if isinstance(cls, Klass) and classes.closed(cls) else UNKNOWN


def _callable(value: Any, classes: Classes) -> bool | None:
    known, literal = _known(value)
    if known:
        return callable(literal)
    if isinstance(value, (Func, Klass)):
        return True
    if isinstance(value, DictV):
        return False
    if isinstance(value, Obj):
        if classes.defines(value.cls, "__call__"):
            return True
        return False if value.where != "entry" and classes.closed(value.cls) else UNKNOWN
    return UNKNOWN


def _hasattr(value: Any, names: frozenset, classes: Classes) -> bool | None:
    """Decided for literals; True where a class body (or a base's) defines the name. Never False
    for an object or class: attributes are set at run time, in any order."""
    (name,) = names if len(names) == 1 else (None,)
    known_name, attr = _known(bare(name)) if name is not None else (False, None)
    if not (known_name and isinstance(attr, str)):
        return UNKNOWN
    known, literal = _known(value)
    if known:
        return hasattr(literal, attr)
    if isinstance(value, Obj) and classes.defines(value.cls, attr):
        return True
    if isinstance(value, Klass) and classes.defines(value, attr):
        return True
    return UNKNOWN
