"""Path-condition formulas are canonical: equal boolean functions are the same value, whatever
way they were built, so simplification (`c or not c` is true) needs no separate step."""

from __future__ import annotations

import random

from auditor.static.interp.formula import FALSE, TRUE, atom, atoms_of, conj, disj, fresh, level, neg


def test_tautologies_contradictions_and_the_three_valued_reading():
    c, d = atom("overlap_p2p_comm"), atom("vpp is None")
    assert disj(c, neg(c)) == TRUE and conj(c, neg(c)) == FALSE
    assert disj(conj(c, d), conj(c, neg(d))) == c
    assert atom("overlap_p2p_comm") == c  # one name, one atom
    assert (level(TRUE), level(FALSE), level(conj(c, d))) == ("yes", "no", "unknown")
    assert atoms_of(disj(c, d)) == ["overlap_p2p_comm", "vpp is None"]


def test_fresh_atoms_equal_nothing_else_and_are_not_named():
    x, y = fresh("(derived)"), fresh("(derived)")
    assert x != y and disj(x, neg(y)) not in (TRUE, FALSE)
    assert disj(x, neg(x)) == TRUE
    assert atoms_of(conj(x, atom("pp == 2"))) == ["pp == 2"]


def _random(rng: random.Random, atoms: list[int], depth: int) -> int:
    if depth == 0:
        return rng.choice(atoms)
    a, b = _random(rng, atoms, depth - 1), _random(rng, atoms, depth - 1)
    return rng.choice([conj, disj])(a, b) if rng.random() < 0.8 else neg(a)


def test_de_morgan_and_distributivity_give_the_same_formula():
    rng = random.Random(9)
    atoms = [atom(f"k{i}") for i in range(6)]
    for _ in range(300):
        a, b, c = (_random(rng, atoms, 3) for _ in range(3))
        assert neg(conj(a, b)) == disj(neg(a), neg(b))
        assert conj(a, disj(b, c)) == disj(conj(a, b), conj(a, c))
        assert neg(neg(a)) == a


def test_formulas_over_more_atoms_than_the_python_stack_holds():
    xs = [fresh("x") for _ in range(3000)]
    anyx, none = FALSE, TRUE
    for x in reversed(xs):  # each new atom is the lowest: one node more, no walk
        anyx, none = disj(anyx, x), conj(none, neg(x))
    assert neg(anyx) == none and disj(anyx, none) == TRUE  # these walk all 3000 levels
