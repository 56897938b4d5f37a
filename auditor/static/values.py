"""Abstract values for the call-graph interpreter, and their truth as formulas.

A variable holds a set of these. Truth is asked as two questions, "can this be true?" and "can
this be false?", each answered by a formula over configuration atoms (`formula.py`): TRUE, FALSE,
or a condition on configuration values nobody told us. Run-time data (a tensor being None, a rank
being even) is TRUE to both: either way at run time, whatever the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.static.formula import FALSE, TRUE, atom, disj, fresh, neg

DERIVED = "(derived)"  # the key of a configuration value computed from unknown ones


@dataclass(frozen=True)
class Const:
    value: Any


@dataclass(frozen=True)
class Cfg:
    """A configuration value: `known` says whether the effective config gives it."""

    key: str
    known: bool
    value: Any = None


@dataclass(frozen=True)
class Data:
    """A run-time value: either way at run time."""

    why: str = ""


@dataclass(frozen=True)
class Cond:
    """The result of a test: under which configurations it can be true, can be false."""

    can_true: int
    can_false: int


@dataclass(frozen=True)
class Module:
    name: str


@dataclass(frozen=True)
class External:
    """A name from outside the analysed sources (torch, transformers, ...)."""

    qualname: str


@dataclass(frozen=True)
class Api:
    """A torch P2P API used as a value (`p2p_func = dist.isend`)."""

    name: str


@dataclass(frozen=True)
class Group:
    """A process group of one parallel dimension ("pp", "cp", ...), or "world"."""

    dim: str


@dataclass(frozen=True)
class ConfigObject:
    """The config object megatron passes around: attributes are configuration values."""

    kind: str = "config"


@dataclass(frozen=True)
class Klass:
    qualname: str
    module: str


@dataclass(frozen=True)
class Func:
    qualname: str
    module: str
    closure: int = 0  # id of the enclosing frame's environment for nested functions
    bound: Any = None  # the instance a method is bound to
    partial: tuple = ()  # (args, kwargs) pre-bound by functools.partial


@dataclass(eq=False)
class Obj:
    """An instance; identity is the allocation, attributes accumulate."""

    cls: Klass
    where: str
    attrs: dict[str, frozenset] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Obj({self.cls.qualname}@{self.where})"


@dataclass(eq=False)
class DictV:
    """A dict with known string keys (what `**kwargs` carries); entries keyed by other known
    values (a dispatch table keyed by class: `{SendActivation: _exec_send_activations}`) are in
    `keyed`, so that `**d` never sees them."""

    items: dict[str, frozenset] = field(default_factory=dict)
    keyed: dict[Any, frozenset] = field(default_factory=dict)


@dataclass(frozen=True)
class Guarded:
    """A value a variable holds only if a branch with an unknown guard ran: calls through it,
    and what is read from it, are reached with that branch's status at best."""

    value: Any
    status: int  # the formula under which the branch that assigned it ran


def bare(v: Any) -> Any:
    return v.value if isinstance(v, Guarded) else v


def ordered(values: frozenset) -> list:
    """The values in an order that is the same in every run. A set iterates by hash: a name's
    hash changes with PYTHONHASHSEED, an object's and a closure's with its address. Where each
    value's turn runs code (a call, a module's first import, a property), that order decides
    when bindings change, and so which calling contexts the interpreter makes."""
    return list(values) if len(values) < 2 else sorted(values, key=_order_key)


def _order_key(v: Any) -> tuple:
    if isinstance(v, Guarded):
        return (*_order_key(v.value), v.status)
    if isinstance(v, Func):
        return ("Func", v.module, v.qualname, _order_key(v.bound) if v.bound is not None else ())
    if isinstance(v, Obj):
        return ("Obj", v.cls.module, v.cls.qualname, v.where)
    if isinstance(v, DictV):
        return ("DictV", tuple(sorted(v.items)))
    return (type(v).__name__, repr(v))  # a record of names and constants


def truth(v: Any) -> tuple[int, int]:
    """(can be true, can be false) of one value."""
    v = bare(v)
    if isinstance(v, Const):
        return (TRUE, FALSE) if v.value else (FALSE, TRUE)
    if isinstance(v, Cfg):
        if not v.known:
            a = fresh(DERIVED) if v.key == DERIVED else atom(v.key)
            return a, neg(a)
        return (TRUE, FALSE) if v.value else (FALSE, TRUE)
    if isinstance(v, Cond):
        return v.can_true, v.can_false
    if isinstance(v, (Data, External)):
        return TRUE, TRUE
    return TRUE, FALSE  # modules, functions, objects, groups are truthy


def truth_of(values: frozenset) -> tuple[int, int]:
    if not values:
        return TRUE, TRUE
    can_true = can_false = FALSE
    for v in values:
        t, f = truth(v)
        can_true, can_false = disj(can_true, t), disj(can_false, f)
    return can_true, can_false


def concrete(v: Any) -> tuple[bool, Any]:
    """(is the value known, the value) for constants and known configuration values."""
    v = bare(v)
    if isinstance(v, Const):
        return True, v.value
    if isinstance(v, Cfg) and v.known:
        return True, v.value
    return False, None


def describe(v: Any) -> str:
    v = bare(v)
    if isinstance(v, Const):
        return "default group" if v.value is None else repr(v.value)
    if isinstance(v, Group):
        return "WORLD" if v.dim == "world" else f"{v.dim} group"
    if isinstance(v, Cfg):
        return f"{v.key}={v.value!r}" if v.known else f"{v.key} (unknown)"
    if isinstance(v, External):
        return v.qualname
    if isinstance(v, Obj):
        return f"{v.cls.qualname} object"
    if isinstance(v, Func):
        return v.qualname
    return "unknown"
