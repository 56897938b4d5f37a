"""Abstract values for the call-graph interpreter, and their truth as formulas.

A variable holds a set of these. Truth is asked as two questions, "can this be true?" and "can
this be false?", each answered by a formula over configuration atoms (`formula.py`): TRUE, FALSE,
or a condition on configuration values nobody told us. Run-time data (a tensor being None, a rank
being even) is TRUE to both: either way at run time, whatever the configuration; a comparison's
truth (`compare`) is a named atom when it tests a configuration value against a constant.

A set grows to a few values at most (`cap`: past that it is MANY, unknown), and a dict with
known keys (`DictV`) is read and written through `dict_get` and `dict_put`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from auditor.static.interp.formula import FALSE, TRUE, atom, disj, fresh, neg

DERIVED = "(derived)"  # the key of a configuration value computed from unknown ones
# A variable holds up to this many values, else MANY.
MAX_VALUES = 6
# A set of functions or classes is kept up to this size: a dispatch table (`_INSTRUCTION_MAP`
# of DeepSpeed's pipeline engine has 10 entries) read with an unknown key may call any of them.
MAX_CALLABLES = 32


@dataclass(frozen=True)
class ConstValue:
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
class GroupValue:
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
    closure: int = 0  # number of the enclosing frame's environment for nested functions
    bound: Any = None  # the instance a method is bound to
    partial: tuple = ()  # (args, kwargs) pre-bound by functools.partial


@dataclass(eq=False)
class Obj:
    """An instance; identity is the allocation, attributes accumulate."""

    cls: Klass
    where: str
    attrs: dict[str, frozenset] = field(default_factory=dict)
    # Made before any later object: orders two instances of one class made at one place
    # (two contexts of one function), as their addresses would differently in every run.
    serial: int = field(default_factory=itertools.count().__next__)

    def __repr__(self) -> str:
        return f"Obj({self.cls.qualname}@{self.where})"


@dataclass(eq=False)
class DictV:
    """A dict with known string keys (what `**kwargs` carries); entries keyed by other known
    values (a dispatch table keyed by class: `{SendActivation: _exec_send_activations}`) are in
    `keyed`, so that `**d` never sees them."""

    items: dict[str, frozenset] = field(default_factory=dict)
    keyed: dict[Any, frozenset] = field(default_factory=dict)
    anykey: frozenset = frozenset()  # values put under keys unknown here (`{s.index: s ...}`)
    # Made before any later dict: what orders it (`ordered`), as for `Obj`. Its entries never
    # do: a dict may hold itself (a child holding its parent), and one shared down a chain
    # would be read once per path.
    serial: int = field(default_factory=itertools.count().__next__)


# `super()` inside a method: its class, module and the `self` it was called with. The class
# name is part of the walk's order (`ordered` sorts by type name): it stays `_Super`.
@dataclass(frozen=True)
class _Super:
    cls: str
    module: str
    self_values: frozenset


@dataclass(frozen=True)
class Elements:
    """A sequence a comprehension made: what its elements can be (not how many, nor in which
    order), so that a loop over it or an item of it is those values."""

    values: frozenset


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
    """A key that tells apart values a set tells apart, from what is the same in every run:
    names, constants, the order the walk made objects, dicts and closures in (never an address,
    nor the text of a set, which lists its members in hash order). A record of names and
    constants goes by its text, which differs where its fields do."""
    if isinstance(v, Guarded):
        return (*_order_key(v.value), v.status)
    if isinstance(v, Func):
        args, kwargs = v.partial or ((), ())
        return ("Func", v.module, v.qualname, _order_key(v.bound) if v.bound is not None else (), v.closure,
                tuple(map(_set_key, args)), tuple((k, _set_key(x)) for k, x in kwargs))
    if isinstance(v, Obj):
        return ("Obj", v.cls.module, v.cls.qualname, v.where, v.serial)
    if isinstance(v, DictV):
        return ("DictV", v.serial)
    if isinstance(v, _Super):
        return ("_Super", v.cls, v.module, _set_key(v.self_values))
    if isinstance(v, Elements):
        return ("Elements", _set_key(v.values))
    return (type(v).__name__, repr(v))  # a record of names and constants


def _set_key(values: frozenset) -> tuple:
    return tuple(sorted(map(_order_key, values)))


def truth(v: Any) -> tuple[int, int]:
    """(can be true, can be false) of one value."""
    v = bare(v)
    if isinstance(v, ConstValue):
        return (TRUE, FALSE) if v.value else (FALSE, TRUE)
    if isinstance(v, Cfg):
        if not v.known:
            a = fresh(DERIVED) if v.key == DERIVED else atom(v.key)
            return a, neg(a)
        return (TRUE, FALSE) if v.value else (FALSE, TRUE)
    if isinstance(v, Cond):
        return v.can_true, v.can_false
    if isinstance(v, (Data, External, Elements)):  # a comprehension may be empty
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
    if isinstance(v, ConstValue):
        return True, v.value
    if isinstance(v, Cfg) and v.known:
        return True, v.value
    return False, None


def describe(v: Any) -> str:
    v = bare(v)
    if isinstance(v, ConstValue):
        return "default group" if v.value is None else repr(v.value)
    if isinstance(v, GroupValue):
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


_NEGATED = {"!=": "==", "is not": "is", "not in": "in", ">=": "<", "<=": ">"}
_MIRRORED = {"==": "==", "!=": "!=", "is": "is", "is not": "is not", "<": ">", ">": "<",
             "<=": ">=", ">=": "<="}


def compare(lv: Any, op: str, rv: Any) -> tuple[int, int]:
    """(can be true, can be false) of `lv op rv`."""
    lv, rv = bare(lv), bare(rv)
    lk, lval = concrete(lv)
    rk, rval = concrete(rv)
    if op in ("is", "is not"):
        if lk and rk:
            res = lval is rval if (lval is None or rval is None) else lval == rval
        elif isinstance(lv, Cfg) or isinstance(rv, Cfg):
            return _config_test(lv, op, rv)
        elif (rk and rval is None and not isinstance(lv, (Data, External))) or (
            lk and lval is None and not isinstance(rv, (Data, External))
        ):
            res = False  # an object, function or group is not None
        else:
            return TRUE, TRUE
        res = res if op == "is" else not res
        return (TRUE, FALSE) if res else (FALSE, TRUE)
    if lk and rk:
        try:
            res = {
                "==": lambda: lval == rval, "!=": lambda: lval != rval, "<": lambda: lval < rval,
                ">": lambda: lval > rval, "<=": lambda: lval <= rval, ">=": lambda: lval >= rval,
                "in": lambda: lval in rval, "not in": lambda: lval not in rval,
            }[op]()
        except (TypeError, KeyError):
            return TRUE, TRUE
        return (TRUE, FALSE) if res else (FALSE, TRUE)
    if (isinstance(lv, Cfg) and not lv.known) or (isinstance(rv, Cfg) and not rv.known):
        return _config_test(lv, op, rv)
    return TRUE, TRUE


def _config_test(lv: Any, op: str, rv: Any) -> tuple[int, int]:
    """A comparison that depends on an unknown configuration value. `key op constant` is a named
    atom (`x != 1` is `not (x == 1)`, `1 < x` is `x > 1`), so the same test met twice is the
    same atom; anything else is a fresh atom, equal to no other test."""
    if isinstance(rv, Cfg) and not rv.known and concrete(lv)[0] and op in _MIRRORED:
        lv, rv, op = rv, lv, _MIRRORED[op]
    known, value = concrete(rv)
    if isinstance(lv, Cfg) and not lv.known and lv.key != DERIVED and known:
        positive = _NEGATED.get(op, op)
        a = atom(f"{lv.key} {positive} {value!r}")
        return (neg(a), a) if op in _NEGATED else (a, neg(a))
    a = fresh(f"{describe(lv)} {op} {describe(rv)}")
    return a, neg(a)


def cond(can_true: int, can_false: int) -> Any:
    if (can_true, can_false) == (TRUE, FALSE):
        return ConstValue(True)
    if (can_true, can_false) == (FALSE, TRUE):
        return ConstValue(False)
    return Cond(can_true, can_false)


MANY = Data("many values")


def cap(values: frozenset) -> frozenset:
    """The values, or MANY when there are more than a variable keeps."""
    if len(values) <= MAX_VALUES:
        return values
    if len(values) <= MAX_CALLABLES and all(isinstance(bare(v), (Func, Klass)) for v in values):
        return values
    return frozenset({MANY})


def dict_put(d: DictV, key: Any, value: frozenset) -> None:
    """`d[key] = value`: under a key known here (a string, or a class, function or constant), or
    among the values any key may read (`anykey`) for a key known only at run time."""
    k = bare(key)
    if isinstance(k, ConstValue) and isinstance(k.value, str):
        d.items[k.value] = value
    elif isinstance(k, (ConstValue, Klass, Func, External)):
        d.keyed[k] = value
    else:
        d.anykey = cap(d.anykey | value)


def dict_get(d: DictV, key: Any) -> frozenset:
    """`d[key]`: the entry of a known key; for a key unknown here (`type(cmd)`), any function
    or class the table holds, since a dispatch table read so may call each of them."""
    k = bare(key)
    if isinstance(k, ConstValue) and isinstance(k.value, str):
        return d.items.get(k.value, frozenset()) | d.anykey
    if isinstance(k, (ConstValue, Klass, Func, External)):
        return d.keyed.get(k, frozenset()) | d.anykey
    return frozenset(v for values in (*d.items.values(), *d.keyed.values()) for v in values
                     if isinstance(bare(v), (Func, Klass))) | d.anykey


def elements_of(values: frozenset) -> frozenset:
    """What iterating over `values` gives: a comprehension's elements, a dict's known keys; else
    (also) a value known only at run time."""
    out: set = set()
    known = True
    for v in map(bare, values):
        if isinstance(v, Elements):
            out |= v.values
        elif isinstance(v, DictV):  # a dict iterates over its keys
            out |= {ConstValue(k) for k in v.items} | set(v.keyed)
            known = known and not v.anykey
        else:
            known = False
    if len(out) > MAX_CALLABLES:  # a table's names: as many as a dispatch table's entries
        return frozenset({MANY})
    return frozenset(out) if out and known else frozenset(out | {Data("loop item")})
