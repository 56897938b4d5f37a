"""The IR in the analysis cache: one module's records as JSON text, read back when it is used.

`json.dumps` writes a record as it is (`[*fields, tag]`: NamedTuples are tuples), so encoding
walks nothing in Python. The text stays text in the cache file, so loading the cache parses no
module's IR; `loads` parses one module's text when the interpreter reaches it. Each function is
a text of its own inside it, parsed and turned into records when the function is first called:
most functions of a loaded module never are (a GLM-5.1 scan calls 226 of the 1,369 functions of
the modules it loads, a fifth of their text). Each tag knows which of its fields are nodes, so a
name or string that spells a tag (`global call`) is never taken for one.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from auditor.errors import InputError
from auditor.sources import cache_dir
from auditor.static.ir.ir import (
    Assign, Attr, BinOp, Bool, Call, Class, ClassIR, Cmp, Comp, Const, Def, Dict, ExprStmt, FuncRef,
    FunctionIR, Global, If, IfExp, Import, Loop, ModuleIR, Name, Not, Opaque, Param, Raise, Return,
    Seq, SiteExpr, StarImport, Sub, Try, With,
)


def dumps(mod: ModuleIR) -> str:
    """The cache's text of a module's IR."""
    functions = {q: json.dumps(f, separators=(",", ":")) for q, f in mod.functions.items()}
    # Each function's IR is stored as its own JSON text, so it can be decoded on demand.
    return json.dumps(mod._replace(functions=functions), separators=(",", ":"))  # type: ignore[arg-type]


def loads(text: str) -> ModuleIR:
    """The records back from `dumps`'s text; functions are read when first asked for."""
    return _e(json.loads(text))


class _Functions(Mapping[str, FunctionIR]):
    """A module's functions, each read back from its text when first asked for."""

    def __init__(self, data: dict[str, str]) -> None:
        self._data = data
        self._read: dict[str, FunctionIR] = {}

    def __getitem__(self, qualname: str) -> FunctionIR:
        fir = self._read.get(qualname)
        if fir is None:
            text = self._data[qualname]  # KeyError: no such function, as for any mapping
            try:
                fir = self._read[qualname] = _e(json.loads(text))
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                # Not a KeyError: `.get` would read it as "no such function" and skip its calls.
                raise InputError(str(cache_dir()), f"the analysis cache's IR of {qualname} does not "
                                 f"read back ({type(exc).__name__}); delete the cache to rebuild "
                                 "it") from None
        return fir

    def __contains__(self, qualname: object) -> bool:
        return qualname in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


_new = tuple.__new__  # a record from its fields, without NamedTuple's argument handling


def _e(d: list | None) -> Any:
    return None if d is None else _READ[d[-1]](d)


def _es(d: list) -> list:
    return [_READ[x[-1]](x) for x in d]


# How each tag's record reads back from [*fields, tag]: records whose fields hold no node take
# the list as it is.
_READ: dict[str, Callable[[list], Any]] = {
    "name": lambda d: _new(Name, d),
    "attr": lambda d: _new(Attr, (_e(d[0]), d[1], d[2])),
    "const": lambda d: _new(Const, d),
    "seq": lambda d: _new(Seq, (_es(d[0]), d[1])),
    "dict": lambda d: _new(Dict, ([(_e(k), _e(v)) for k, v in d[0]], d[1])),
    "call": lambda d: _new(Call, (_e(d[0]), _es(d[1]), {k: _e(v) for k, v in d[2].items()},
                                  _e(d[3]), _e(d[4]), d[5], d[6])),
    "cmp": lambda d: _new(Cmp, (_e(d[0]), [(op, _e(v)) for op, v in d[1]], d[2])),
    "bool": lambda d: _new(Bool, (d[0], _es(d[1]), d[2])),
    "not": lambda d: _new(Not, (_e(d[0]), d[1])),
    "ifexp": lambda d: _new(IfExp, (_e(d[0]), _e(d[1]), _e(d[2]), d[3])),
    "binop": lambda d: _new(BinOp, (d[0], _e(d[1]), _e(d[2]), d[3])),
    "sub": lambda d: _new(Sub, (_e(d[0]), _e(d[1]), d[2])),
    "func": lambda d: _new(FuncRef, d),
    "site": lambda d: _new(SiteExpr, (d[0], _e(d[1]), d[2])),
    "opaque": lambda d: _new(Opaque, (_es(d[0]), d[1])),
    "comp": lambda d: _new(Comp, (d[0], _e(d[1]), _e(d[2]), [(_e(t), _e(i), _es(c)) for t, i, c in d[3]],
                                  d[4])),
    "assign": lambda d: _new(Assign, (_es(d[0]), _e(d[1]), d[2])),
    "expr": lambda d: _new(ExprStmt, (_e(d[0]), d[1])),
    "return": lambda d: _new(Return, (_e(d[0]), d[1])),
    "raise": lambda d: _new(Raise, d),
    "if": lambda d: _new(If, (_e(d[0]), d[1], _es(d[2]), _es(d[3]), d[4])),
    "loop": lambda d: _new(Loop, (_e(d[0]), d[1], _e(d[2]), _e(d[3]), _es(d[4]), _es(d[5]), d[6])),
    "with": lambda d: _new(With, ([(_e(c), _e(t)) for c, t in d[0]], _es(d[1]), d[2])),
    "try": lambda d: _new(Try, (_es(d[0]), [_es(h) for h in d[1]], _es(d[2]), _es(d[3]), d[4])),
    "def": lambda d: _new(Def, d),
    "class": lambda d: _new(Class, d),
    "import": lambda d: _new(Import, ([tuple(b) for b in d[0]], d[1])),
    "star": lambda d: _new(StarImport, d),
    "global": lambda d: _new(Global, d),
    "param": lambda d: _new(Param, (d[0], _e(d[1]), d[2], d[3])),
    "function": lambda d: _new(FunctionIR, (d[0], d[1], _es(d[2]), _es(d[3]), _es(d[4]), d[5], d[6],
                                            d[7])),
    "classdef": lambda d: _new(ClassIR, (d[0], d[1], _es(d[2]), _es(d[3]), d[4])),
    "module": lambda d: _new(ModuleIR, (d[0], d[1], _es(d[2]), _Functions(d[3]),
                                        {k: _e(v) for k, v in d[4].items()},
                                        {k: [(n, _e(v)) for n, v in pairs] for k, pairs in d[5].items()},
                                        d[6])),
}
