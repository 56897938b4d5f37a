"""The IR keeps the texts and constants it had when it was built from libcst: guards as written
with their parentheses and comments, one index for `x[a,]`, a string written as two literals
read as an expression. VALID pairs (code, the IR part it must give)."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from textwrap import dedent

import pytest

from auditor.static.ir import codec, ir
from auditor.static.ir.build import build
from auditor.static.source import Source


def body(code: str) -> list:
    code = dedent(code)
    return build(ast.parse(code), Source(code), "m", False, {}).body


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
    guard = stmt.orelse[0].text if "elif" in code else stmt.text
    assert guard == text


def test_loop_texts_as_written():
    assert body("for (i, j) in (pairs):\n    pass\n")[0].text == "for (i, j) in (pairs)"
    assert body("while (n > 0):  # (count down)\n    pass\n")[0].text == "while (n > 0)"


@pytest.mark.parametrize("code,index", [
    ("x[a]", ir.Name("a")),
    ("x[a,]", ir.Name("a")),
    ("x[(a, b)]", ir.Seq([ir.Name("a"), ir.Name("b")])),
    ("x[a, b]", None),
    ("x[1:2]", None),
])
def test_subscript_index(code, index):
    assert _kinds(body(code)[0].value.index) == _kinds(index)  # kinds compared too


@pytest.mark.parametrize("code,value", [
    ('"ab"', ir.Const("ab")),
    ("'a\\'' ", ir.Const("a'")),
    ('"""a"b"""', ir.Const('a"b')),
    ('"a" "b"', ir.Opaque([])),
    ('("a"\n "b")', ir.Opaque([])),
    ('b"a"', ir.Opaque([])),
])
def test_string_constants(code, value):
    assert _kinds(body(code)[0].value) == _kinds(value)


def test_a_def_in_both_branches_is_numbered_from_the_else():
    functions = build(ast.parse(c := "if x:\n    def f(): pass\nelse:\n    def f(): return 1\n"),
                      Source(c), "m", False, {}).functions
    assert _kinds(functions["f"].body) == _kinds([ir.Return(ir.Const(1))])
    assert functions["f#2"].body == []


def _kinds(value: object) -> object:
    """A record as (kind, fields...), all the way down: equal records of other kinds differ."""
    if isinstance(value, tuple) and type(value) is not tuple:
        return (type(value).__name__, *map(_kinds, value))
    if isinstance(value, (list, tuple)):
        return [_kinds(v) for v in value]
    if isinstance(value, Mapping):  # a module's functions read back one by one
        return {k: _kinds(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("code", [
    # Names and strings that spell a kind, where the kind says a plain value is held.
    "def f(name, call=('call', 1), *seq, **opaque):\n    global name\n    return {'name': name}\n",
    "from a import name as call, b\nimport c.d as site\nwith x as (name, y):\n    raise\n",
    "from .x import *\ntry:\n    from y import *\nexcept ImportError:\n    star = 1\n",
    "match x:\n    case 1:\n        y = lambda q=1: q\n    case _:\n        pass\nwhile not x or y < 2 < z: pass\n",
])
def test_records_come_back_from_the_cache_form(code):
    """VALID: what the analysis cache stores (JSON) reads back into the same records."""
    built = build(ast.parse(code), Source(code), "m", False, {})
    back = codec.loads(codec.dumps(built))
    assert _kinds(back) == _kinds(built)


def test_the_interpreter_reads_back_its_own_code():
    functions = 0
    for path in sorted((Path(ir.__file__).parent.parent / "interp").glob("*.py")):
        code = path.read_text()
        built = build(ast.parse(code), Source(code), f"auditor.static.interp.{path.stem}", False, {})
        back = codec.loads(codec.dumps(built))
        assert _kinds(back) == _kinds(built), path
        functions += len(back.functions)
    assert functions > 50


@pytest.mark.parametrize("code,stars,declared", [
    # VALID: star imports at the top level and in blocks there, relative ones resolved; the
    # first top-level literal `__all__`.
    ("from .a import *\ntry:\n    from b.c import *\nexcept ImportError:\n    pass\n",
     ["pkg.a", "b.c"], None),
    ("if x:\n    from .a import *\n__all__ = ['f', \"g\"]\n__all__ = ['h']\n", ["pkg.a"], ["f", "g"]),
    ("__all__ = ('f',)\n", [], ["f"]),
    # INVALID: no star import (a named import, one in a function), no literal `__all__`.
    ("from .a import f\ndef g():\n    import a\n", [], None),
    ("__all__ = names()\n", [], None),
    ("if x:\n    __all__ = ['f']\n", [], None),
])
def test_star_imports_are_read_from_the_ir(code, stars, declared):
    mod = build(ast.parse(code), Source(code), "pkg.m", False, {})
    assert ir.star_imports(mod) == (stars, declared)
    assert ir.star_imports(codec.loads(codec.dumps(mod))) == (stars, declared)


@pytest.mark.parametrize("code, assigned", [
    # VALID: `global` makes the name the module's
    ("def f():\n    global h\n    h = make()\n", {"f": ["h"]}),
    # INVALID: `nonlocal` names the enclosing function's variable, never a module global
    ("def outer():\n    h = None\n    def inner():\n        nonlocal h\n        h = make()\n", {}),
])
def test_only_global_makes_module_globals(code, assigned):
    module = build(ast.parse(code), Source(code), "m", False, {})
    assert {k: [n for n, _ in v] for k, v in module.global_assignments.items()} == assigned
