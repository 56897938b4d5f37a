"""The IR keeps the texts and constants it had when it was built from libcst: guards as written
with their parentheses and comments, one index for `x[a,]`, a string written as two literals
read as an expression. VALID pairs (code, the IR part it must give)."""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from auditor.static import ir
from auditor.static.source import Source


def body(code: str) -> list:
    code = dedent(code)
    return ir.build(ast.parse(code), Source(code), "m", False, {})["body"]


@pytest.mark.parametrize("code,text", [
    ("if a and b:\n    pass\n", "a and b"),
    ("if (a and b):\n    pass\n", "(a and b)"),
    ("if (  # why\n    a and (b)\n):\n    pass\n", "( # why a and (b) )"),
    ("if (a) and (b):\n    pass\n", "(a) and (b)"),
    ("if x:\n    pass\nelif ((y)):\n    pass\n", "((y))"),
    ("if é == (1):\n    pass\n", "é == (1)"),
])
def test_guard_texts_as_written(code, text):
    stmt = body(code)[-1]
    guard = stmt[4][0][2] if "elif" in code else stmt[2]
    assert guard == text


def test_loop_texts_as_written():
    assert body("for (i, j) in (pairs):\n    pass\n")[0][2] == "for (i, j) in (pairs)"
    assert body("while (n > 0):  # (count down)\n    pass\n")[0][2] == "while (n > 0)"


@pytest.mark.parametrize("code,index", [
    ("x[a]", ("name", "a")),
    ("x[a,]", ("name", "a")),
    ("x[(a, b)]", ("seq", [("name", "a"), ("name", "b")])),
    ("x[a, b]", None),
    ("x[1:2]", None),
])
def test_subscript_index(code, index):
    assert body(code)[0][1][2] == index


@pytest.mark.parametrize("code,value", [
    ('"ab"', ("const", "ab")),
    ("'a\\'' ", ("const", "a'")),
    ('"""a"b"""', ("const", 'a"b')),
    ('"a" "b"', ("opaque", [])),
    ('("a"\n "b")', ("opaque", [])),
    ('b"a"', ("opaque", [])),
])
def test_string_constants(code, value):
    assert body(code)[0][1] == value


def test_a_def_in_both_branches_is_numbered_from_the_else():
    functions = ir.build(ast.parse(c := "if x:\n    def f(): pass\nelse:\n    def f(): return 1\n"),
                         Source(c), "m", False, {})["functions"]
    assert functions["f"]["body"] == [("return", ("const", 1))] and functions["f#2"]["body"] == []
