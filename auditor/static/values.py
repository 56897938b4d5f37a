"""Abstract values for the call-graph interpreter, and three-valued truth.

A variable holds a set of these. Truth is asked as two questions, "can this be true?" and "can
this be false?", each answered yes / no / unknown. "unknown" means: it depends on a configuration
value nobody told us; run-time data (a tensor being None, a rank being even) is "yes" to both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

YES, NO, UNK = "yes", "no", "unknown"


def and3(a: str, b: str) -> str:
    if NO in (a, b):
        return NO
    return UNK if UNK in (a, b) else YES


def or3(a: str, b: str) -> str:
    if YES in (a, b):
        return YES
    return UNK if UNK in (a, b) else NO


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
    """The result of a test: can it be true, can it be false."""

    can_true: str
    can_false: str


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
    """A dict with known string keys (what `**kwargs` carries)."""

    items: dict[str, frozenset] = field(default_factory=dict)


@dataclass(frozen=True)
class Guarded:
    """A value a variable holds only if a branch with an unknown guard ran: calls through it,
    and what is read from it, are reached with that branch's status at best."""

    value: Any
    status: str


def bare(v: Any) -> Any:
    return v.value if isinstance(v, Guarded) else v


def truth(v: Any) -> tuple[str, str]:
    """(can be true, can be false) of one value."""
    v = bare(v)
    if isinstance(v, Const):
        return (YES, NO) if v.value else (NO, YES)
    if isinstance(v, Cfg):
        if not v.known:
            return UNK, UNK
        return (YES, NO) if v.value else (NO, YES)
    if isinstance(v, Cond):
        return v.can_true, v.can_false
    if isinstance(v, (Data, External)):
        return YES, YES
    return YES, NO  # modules, functions, objects, groups are truthy


def truth_of(values: frozenset) -> tuple[str, str]:
    if not values:
        return YES, YES
    can_true = can_false = NO
    for v in values:
        t, f = truth(v)
        can_true, can_false = or3(can_true, t), or3(can_false, f)
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
