"""Path conditions as boolean formulas over configuration atoms, kept canonical.

A formula is an int: a node of one shared reduced ordered BDD. Equal formulas are the same int,
so `c or not c` is TRUE and `c and not c` is FALSE without a separate simplification step, and a
site reached under `c` on one path and `not c` on another is reached, whatever `c` is. Atoms are
named tests on configuration values nobody gave (`overlap_p2p_comm`, `vpp_size is None`); a value
derived from them that the interpreter cannot name gets a fresh atom of its own, equal to nothing
else. Run-time data is no atom: both of its branches can run under every configuration.
"""

from __future__ import annotations

import itertools

FALSE, TRUE = 0, 1
YES, NO, UNK = "yes", "no", "unknown"

# node id -> (atom index, low child, high child); ids 0 and 1 are the constants.
_nodes: list[tuple[int, int, int]] = [(-1, 0, 0), (-1, 1, 1)]
_unique: dict[tuple[int, int, int], int] = {}
_atoms: dict[str, int] = {}
_names: list[str] = []
_apply: dict[tuple[str, int, int], int] = {}
_fresh = itertools.count()
_unnamed: set[int] = set()  # atoms made by `fresh`


def _mk(var: int, low: int, high: int) -> int:
    if low == high:
        return low
    key = (var, low, high)
    node = _unique.get(key)
    if node is None:
        node = _unique[key] = len(_nodes)
        _nodes.append(key)
    return node


def atom(name: str) -> int:
    """The formula "the test `name` holds"; the same name is the same atom."""
    var = _atoms.get(name)
    if var is None:
        var = _atoms[name] = len(_names)
        _names.append(name)
    return _mk(var, FALSE, TRUE)


def fresh(what: str) -> int:
    """An atom equal to no other: an unknown the interpreter cannot name."""
    f = atom(f"{what} #{next(_fresh)}")
    _unnamed.add(_nodes[f][0])
    return f


def _op(op: str, a: int, b: int) -> int:
    if op == "and":
        if a == FALSE or b == FALSE:
            return FALSE
        if a == TRUE:
            return b
        if b == TRUE or a == b:
            return a
    else:
        if a == TRUE or b == TRUE:
            return TRUE
        if a == FALSE:
            return b
        if b == FALSE or a == b:
            return a
    if a > b:
        a, b = b, a
    key = (op, a, b)
    hit = _apply.get(key)
    if hit is not None:
        return hit
    va, la, ha = _nodes[a]
    vb, lb, hb = _nodes[b]
    var = min(v for v in (va, vb) if v >= 0)
    a0, a1 = (la, ha) if va == var else (a, a)
    b0, b1 = (lb, hb) if vb == var else (b, b)
    out = _mk(var, _op(op, a0, b0), _op(op, a1, b1))
    _apply[key] = out
    return out


def conj(a: int, b: int) -> int:
    return _op("and", a, b)


def disj(a: int, b: int) -> int:
    return _op("or", a, b)


def neg(a: int) -> int:
    if a in (FALSE, TRUE):
        return TRUE - a
    key = ("not", a, a)
    hit = _apply.get(key)
    if hit is None:
        var, low, high = _nodes[a]
        hit = _apply[key] = _mk(var, neg(low), neg(high))
    return hit


def level(f: int) -> str:
    """The three-valued reading: yes (under every configuration), no (under none), unknown."""
    return YES if f == TRUE else NO if f == FALSE else UNK


def atoms_of(f: int) -> list[str]:
    """The named atoms a formula depends on (fresh ones left out), in atom order."""
    seen: set[int] = set()
    found: set[int] = set()
    stack = [f]
    while stack:
        n = stack.pop()
        if n in (FALSE, TRUE) or n in seen:
            continue
        seen.add(n)
        var, low, high = _nodes[n]
        found.add(var)
        stack += [low, high]
    return [_names[v] for v in sorted(found - _unnamed)]
