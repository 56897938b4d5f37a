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


def _known(op: str, a: int, b: int) -> int | None:
    """The result of `a op b` without recursing, when a constant, an equality or a memo says it."""
    if op == "and":
        if a == FALSE or b == FALSE:
            return FALSE
        if a == TRUE:
            return b
        if b == TRUE or a == b:
            return a
    elif op == "or":
        if a == TRUE or b == TRUE:
            return TRUE
        if a == FALSE:
            return b
        if b == FALSE or a == b:
            return a
    elif a in (FALSE, TRUE):  # "not": b is a
        return TRUE - a
    return _apply.get((op, min(a, b), max(a, b)))


def _op(op: str, a: int, b: int) -> int:
    """Shannon expansion on the lowest atom of the two, iteratively (a formula may have more
    atoms than Python has stack frames), memoised for the life of the process."""
    done = _known(op, a, b)
    if done is not None:
        return done
    stack = [(a, b)]
    while stack:
        x, y = stack[-1]
        if _known(op, x, y) is not None:
            stack.pop()
            continue
        vx, lx, hx = _nodes[x]
        vy, ly, hy = _nodes[y]
        var = min(v for v in (vx, vy) if v >= 0)
        x0, x1 = (lx, hx) if vx == var else (x, x)
        y0, y1 = (ly, hy) if vy == var else (y, y)
        if op == "not":
            y0, y1 = x0, x1
        low, high = _known(op, x0, y0), _known(op, x1, y1)
        if low is None or high is None:
            stack += [pair for pair, r in (((x0, y0), low), ((x1, y1), high)) if r is None]
            continue
        stack.pop()
        _apply[(op, min(x, y), max(x, y))] = _mk(var, low, high)
    return _known(op, a, b)  # type: ignore[return-value]


def conj(a: int, b: int) -> int:
    return _op("and", a, b)


def disj(a: int, b: int) -> int:
    return _op("or", a, b)


def neg(a: int) -> int:
    return _op("not", a, a)


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
