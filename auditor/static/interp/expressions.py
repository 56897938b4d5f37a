"""Expressions: each evaluates to the set of abstract values it can have (`values.py`); tests
to formulas over the unknown configuration (`formula.py`); names looked up through locals,
closures, module globals, star imports and the rules' known names."""

from __future__ import annotations

import builtins
from typing import Any

from auditor.static.interp.formula import FALSE, TRUE, conj, disj
from auditor.static.interp.graph import Hit
from auditor.static.interp.shared import CALL_UNKNOWN, INSTANCE, InterpreterCore
from auditor.static.interp.state import Frame, State
from auditor.static.interp.values import (
    DERIVED, MAX_CALLABLES, Cfg, ConfigObject, ConstValue, Cond, Data, DictV, Elements, External, Func,
    GroupValue, bare, cap, compare, cond, dict_get, dict_put, elements_of, ordered, truth_of,
)
from auditor.static.ir import ir


class Expressions(InterpreterCore):
    def eval(self, e: ir.Expr | None, state: State, frame: Frame) -> frozenset:
        match e:
            case None:
                return frozenset({ConstValue(None)})
            case ir.Const(value):
                return frozenset({ConstValue(value)})
            case ir.Name(name):
                return self.lookup(name, state, frame)
            case ir.Attr():
                return self.eval_attr(e, state, frame)
            case ir.Call():
                return self.eval_call(e, state, frame)
            case ir.SiteExpr(site, inner):
                if not isinstance(inner, ir.Call):
                    self.hits.append(Hit(frame.node, site, state.status, state.guards))
                    return self.eval(inner, state, frame)
                result, args, kwargs, receivers = self._call(inner, state, frame)
                groups = self._hit_groups(site, args, kwargs, receivers)
                self.hits.append(Hit(frame.node, site, state.status, state.guards, groups))
                return result
            case ir.Cmp():
                return frozenset({self.eval_compare(e, state, frame)})
            case ir.Bool():
                return frozenset({self.eval_bool(e, state, frame)})
            case ir.Not(operand):
                t, f = truth_of(self.eval(operand, state, frame))
                return frozenset({cond(f, t)})
            case ir.IfExp(test, body, orelse):
                t, f = truth_of(self.eval(test, state, frame))
                out: frozenset = frozenset()
                if t != FALSE:
                    out |= self.eval(body, state, frame)
                if f != FALSE:
                    out |= self.eval(orelse, state, frame)
                return cap(out)
            case ir.FuncRef(qualname):
                return frozenset({Func(qualname, frame.module, self._closure(state, frame))})
            case ir.Dict(items):
                d = DictV()
                for key, item_ir in items:
                    v = self.eval(item_ir, state, frame)
                    if key is not None:
                        for k in self.eval(key, state, frame):
                            dict_put(d, k, v)
                return frozenset({d})
            case ir.BinOp(_, left_ir, right_ir):
                left, right = self.eval(left_ir, state, frame), self.eval(right_ir, state, frame)
                if any(isinstance(v, Cfg) and not v.known for v in left | right):
                    return frozenset({Cfg(DERIVED, False)})
                return frozenset({Data("arith")})
            case ir.Sub(base_ir, index_ir):
                base = self.eval(base_ir, state, frame)
                index = self.eval(index_ir, state, frame) if index_ir is not None else frozenset()
                out = frozenset()
                for b in base:
                    if isinstance(b, DictV):
                        for k in index:
                            out |= dict_get(b, k)
                    elif isinstance(b, Elements):
                        out |= b.values
                return cap(out) or frozenset({Data("item")})
            case ir.Seq(items):
                # A display holds what its items can be (a starred item is built as its own
                # items, `Sub(x, None)`): `[self._stage]` handed on is walked by a loop.
                values = frozenset().union(*(self.eval(item, state, frame) for item in items))
                return frozenset({Elements(cap(values))}) if values else frozenset({Data("sequence")})
            case ir.Opaque(parts):
                for sub in parts:
                    self.eval(sub, state, frame)
                return frozenset({Data("expression")})
            case ir.Comp():
                return self.eval_comp(e, state, frame)
        raise TypeError(f"not an IR expression: {e!r}")

    def eval_comp(self, e: ir.Comp, state: State, frame: Frame) -> frozenset:
        """A comprehension, in a scope of its own (its targets do not leak): each target holds
        the elements of its iterable, one at a time where they are known constants (a dict's
        keys), so that `{k.lower(): k for k in table}` pairs each key with its own; the result
        holds what the element (or key: value) can be."""
        pairs: list[tuple[frozenset, frozenset]] = []
        self._comp_loops(e, 0, State(dict(state.env), state.guards, state.status), frame, pairs)
        values = cap(frozenset(v for _, vs in pairs for v in vs))
        if e.kind != "dict":
            return frozenset({Elements(values)})
        d = DictV()
        for keys, value in pairs:
            for k in keys:
                dict_put(d, k, cap(dict_get(d, k) | value) if isinstance(bare(k), ConstValue) else value)
        return frozenset({d})

    def _comp_loops(self, e: ir.Comp, i: int, inner: State, frame: Frame,
                    pairs: list[tuple[frozenset, frozenset]]) -> None:
        if i == len(e.loops):
            keys = self.eval(e.key, inner, frame) if e.key is not None else frozenset()
            pairs.append((keys, self.eval(e.value, inner, frame)))
            return
        target, iterable, tests = e.loops[i]
        items = elements_of(self.eval(iterable, inner, frame))
        one_by_one = all(isinstance(bare(v), ConstValue) for v in items) and len(items) <= MAX_CALLABLES
        for part in ([frozenset({v}) for v in ordered(items)] if one_by_one else [items]):
            if isinstance(target, ir.Name):
                inner.env[target.id] = part
            else:
                self.assign(target, part, inner, frame)
            for test in tests:
                self.eval(test, inner, frame)
            self._comp_loops(e, i + 1, inner, frame, pairs)

    def eval_compare(self, e: ir.Cmp, state: State, frame: Frame) -> Any:
        left = self.eval_read(e.left, state, frame)
        result = Cond(TRUE, FALSE)
        for op, right_ir in e.ops:
            right = self.eval_read(right_ir, state, frame)
            t = f = FALSE
            for lv in left:
                for rv in right:
                    ct, cf = compare(lv, op, rv)
                    t, f = disj(t, ct), disj(f, cf)
            result = Cond(conj(result.can_true, t), disj(result.can_false, f))
            left = right
        return result

    def eval_bool(self, e: ir.Bool, state: State, frame: Frame) -> Any:
        op, values, _ = e
        t, f = (TRUE, FALSE) if op == "and" else (FALSE, TRUE)
        for v in values:
            vt, vf = truth_of(self.eval(v, state, frame))
            if op == "and":
                t, f = conj(t, vt), disj(f, vf)
            else:
                t, f = disj(t, vt), conj(f, vf)
        return cond(t, f)

    def lookup(self, name: str, state: State, frame: Frame) -> frozenset:
        return self._force(self.lookup_quiet(name, state, frame))

    def lookup_quiet(self, name: str, state: State, frame: Frame) -> frozenset:
        if name in state.env:
            return state.env[name]
        closure = frame.closure
        while closure:
            env, parent = self.closures[closure]
            if name in env:
                return env[name]
            closure = parent
        module_env = self.globals.get(frame.module)
        if module_env is None:
            module_env = self.module_globals(frame.module) or {}
        if name in module_env:
            return module_env[name]
        starred = self.star_lookup(frame.module, name)
        if starred is not None:
            return starred
        if name == "__name__":  # an imported module's own name: its `__main__` block does not run
            return frozenset({ConstValue(frame.module)})
        if name in (INSTANCE, CALL_UNKNOWN):
            return frozenset({External(name)})
        if name == "super" and frame.cls is not None:
            return frozenset({External("builtins.super")})
        if name in self.rules.config_names:
            return frozenset({ConfigObject()})
        if name in self.rules.group_names:
            return frozenset({GroupValue(self.rules.group_names[name])})
        if hasattr(builtins, name):
            return frozenset({External(f"builtins.{name}")})
        return frozenset({Data(f"unbound {name}")})
