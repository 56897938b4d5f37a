"""Statements and assignment: blocks, branches under their guards (a branch that cannot be
taken is recorded as blocked, with what it would have called), loops walked again while they
install patches, `try`, imports, definitions, and assignments to names, attributes (a module's or
a class's: the monkeypatches) and subscripts."""

from __future__ import annotations

from typing import Any

from auditor.static.interp.formula import FALSE, TRUE, conj, level
from auditor.static.interp.graph import Blocked, Guard, AttrPatch
from auditor.static.interp.shared import (
    ENTRY_PREFIX, MAX_LOOP_PASSES, InterpreterCore, Lazy, python_qualname,
)
from auditor.static.interp.state import Frame, State, guard_new_values, join, join_env
from auditor.static.interp.values import (
    ConstValue, Data, DictV, External, Func, Klass, Module, Obj, bare, cap, dict_put, elements_of,
    ordered, truth_of,
)
from auditor.static.ir import ir


class Statements(InterpreterCore):
    def exec_block(self, stmts: list[ir.Stmt], state: State, frame: Frame) -> State:
        for i, stmt in enumerate(stmts):
            state = self.exec_stmt(stmt, state, frame)
            if state.done:
                if state.stop is not None and i + 1 < len(stmts):
                    self.block(stmts, i + 1, (*state.guards, state.stop), state, frame)
                break
        return state

    def exec_namespace(self, stmts: list[ir.Stmt], env: dict[str, frozenset], frame: Frame) -> None:
        """Runs a module or class body. Its namespace stays the same dict across branches,
        since functions look their globals up in it."""
        for stmt in stmts:
            state = self.exec_stmt(stmt, State(env), frame)
            if state.env is not env:
                env.update(state.env)
            if state.done:
                break

    def exec_stmt(self, stmt: ir.Stmt, state: State, frame: Frame) -> State:
        match stmt:
            case ir.ExprStmt(value):
                self.eval(value, state, frame)
            case ir.Assign(targets, value_ir):
                values = self.eval(value_ir, state, frame)
                for target in targets:
                    self.assign(target, values, state, frame)
            case ir.If():
                return self.exec_if(stmt, state, frame)
            case ir.Return(value):
                if value is not None:
                    frame.returns.update(self.eval(value, state, frame))
                else:
                    frame.returns.add(ConstValue(None))
                state.done = True
            case ir.Raise():
                state.done = state.raised = True
            case ir.Loop():
                return self.exec_loop(stmt, state, frame)
            case ir.With(items, body):
                for item, as_target in items:
                    self.eval(item, state, frame)
                    if as_target is not None:
                        self.assign(as_target, frozenset({Data("with")}), state, frame)
                return self.exec_block(body, state, frame)
            case ir.Try():
                return self.exec_try(stmt, state, frame)
            case ir.Def(name, qualname):
                state.env[name] = frozenset({Func(qualname, frame.module, self._closure(state, frame))})
            case ir.Class(name, qualname):
                state.env[name] = frozenset({Klass(qualname, frame.module)})
            case ir.Global(names) if frame.kind == "function":
                frame.global_names.update(names)
            case ir.Import(bindings):
                self.exec_import(bindings, state, frame)
        return state

    def exec_try(self, stmt: ir.Try, state: State, frame: Frame) -> State:
        start = State(dict(state.env), state.guards, state.status)
        body_end = self.exec_block(stmt.body, state, frame)
        outs = [] if body_end.done else [self.exec_block(stmt.orelse, body_end, frame)]
        for handler in stmt.handlers:
            h = State(join_env(start.env, body_end.env), start.guards, start.status)
            outs.append(self.exec_block(handler, h, frame))
        live = [s for s in outs if not s.done]
        merged = join(live) if live else State(start.env, start.guards, start.status, True)
        if stmt.final:
            final = self.exec_block(stmt.final, State(dict(merged.env), merged.guards, merged.status), frame)
            merged.env = final.env
            merged.done = merged.done or final.done
        return merged

    def exec_import(self, bindings: list[tuple[str, str, bool]], state: State, frame: Frame) -> None:
        for local, target, is_module in bindings:
            state.env[local] = frozenset({self.import_value(local, target, is_module)})
            if frame.kind == "function" or frame.module.startswith(ENTRY_PREFIX):
                # An import that runs (in entry code or a function) runs the module, whose
                # top level may install patches (`import pkg.patches`). Module-level imports
                # stay lazy: their module runs when something of it is used.
                self.module_globals(target if is_module else target.rpartition(".")[0])

    def _closure(self, state: State, frame: Frame) -> int:
        """What a function defined here closes over: this frame's locals, if it has any."""
        if frame.kind != "function":
            return frame.closure
        number = self.closure_numbers.get(id(state.env))  # `closures` holds the env: its id is its own
        if number is None:
            number = self.closure_numbers[id(state.env)] = len(self.closures) + 1
            self.closures[number] = (state.env, frame.closure)
        return number

    def import_value(self, local: str, target: str, is_module: bool) -> Any:
        if is_module:
            head = target if local != target.split(".")[0] else target.split(".")[0]
            self.program.prefetch(head)
            if self.program.has_module(head):
                return Module(head)
            self.imported.add(target)  # imported, so run, though not read
            return External(head)
        module, _, attr = target.rpartition(".")
        self.program.prefetch(module)
        if self.program.has_module(target):
            self.program.prefetch(target)
            return Module(target)
        if self.program.has_module(module):
            return Lazy(module, attr)
        self.imported.add(target)
        return External(target)

    def exec_if(self, stmt: ir.If, state: State, frame: Frame) -> State:
        test, text, body, orelse, _ = stmt
        reads = self.config_reads
        can_true, can_false = truth_of(self.eval(test, state, frame))
        config = self.config_reads != reads
        outs: list[State] = []
        stop = None
        for branch, status, guard_text in ((body, can_true, text), (orelse, can_false, f"not ({text})")):
            # A branch whose guard contradicts the path to it (`if c:` inside `if not c:`)
            # cannot be taken here either.
            if status != FALSE and (state.status == FALSE or conj(state.status, status) != FALSE):
                guard = Guard.of(guard_text, status, config)
                outs.append(self.exec_block(branch, state.fork(guard, status), frame))
                continue
            stop = Guard.of(guard_text, FALSE, config)
            if branch:
                self.block(branch, 0, (*state.guards, stop), state, frame)
        live = [s for s in outs if not s.done]
        if not live:
            if len(outs) != 1:  # else the branch that would go on is false: say so for what follows
                stop = None
            return State(state.env, state.guards, state.status, True, all(s.raised for s in outs), stop)
        if len(live) == 1 and len(outs) == 2 and any(s.raised for s in outs):
            # The other branch is a validation error (`raise`): runs that get past it are the
            # ones analysed, so its guard neither makes what follows unknown nor explains it.
            live[0].status = state.status
            live[0].guards = state.guards
        if len(live) == 1:
            # The other branch cannot be taken, or returned: what follows runs under this
            # branch's guard.
            return live[0]
        for out in live:  # what only an uncertain branch assigned holds only if it ran
            if out.status != state.status:
                guard_new_values(out, state.env)
        joined = join(live)
        joined.status = state.status  # one of the two branches runs, and both go on
        return joined

    def exec_loop(self, stmt: ir.Loop, state: State, frame: Frame) -> State:
        test, _, target, iterable, body, orelse, _ = stmt
        if test is not None:
            can_true, _ = truth_of(self.eval(test, state, frame))
        else:
            items = elements_of(self.eval(iterable, state, frame))
            can_true = TRUE
            assert target is not None, "a for loop has a target"
            self.assign(target, items, state, frame)
        if can_true == FALSE:
            return self.exec_block(orelse, state, frame)
        env = dict(state.env)
        for _ in range(MAX_LOOP_PASSES):
            # A patch installed during one pass (in the body or what it calls) applies to the
            # calls of the next iteration: walk the body again while passes install new ones.
            patches = len(self.patches)
            inner = self.exec_block(body, State(dict(env), state.guards, state.status), frame)
            env = join_env(env, inner.env)
            if len(self.patches) == patches:
                break
        return self.exec_block(orelse, State(env, state.guards, state.status), frame)

    def block(self, stmts: list[ir.Stmt], start: int, guards: tuple[Guard, ...], state: State,
              frame: Frame) -> None:
        """Records what `stmts[start:]`, a branch that cannot be taken, would have called."""
        key = (id(stmts), start)
        if key not in self.reads:  # the IR lists live as long as the program: ids are stable
            sites: set[str] = set()
            defs: set[str] = set()
            attrs: set[tuple[str, str]] = set()
            names = ir.names_in(stmts[start:], sites, defs, attrs)
            self.reads[key] = (stmts, names, sites, defs, attrs)
        _, names, sites, defs, attrs = self.reads[key]
        funcs: set[str] = set()
        values: set = set()
        for name in sorted(names):
            values |= self.lookup_quiet(name, state, frame)
        for name, attr in sorted(attrs):  # `self._communicate_shapes(...)`, `module.f(...)`
            for base in ordered(self.lookup_quiet(name, state, frame)):
                if isinstance(base, (Obj, Module, Klass)):
                    values |= self.attr_of(base, attr, name)
        for v in values:
            if isinstance(v, Func):
                funcs.add(f"{v.module}.{python_qualname(v.qualname)}")
        funcs |= {f"{frame.module}.{python_qualname(qualname)}" for qualname in defs}
        if funcs or sites:
            self.blocked.append(Blocked(frame.node, guards, frozenset(funcs), frozenset(sites)))

    def assign(self, target: ir.Expr, value: frozenset, state: State, frame: Frame) -> None:
        if isinstance(target, ir.SiteExpr):
            target = target.expr
        match target:
            case ir.Name(name):
                if name in frame.global_names:
                    self._assign_global(frame.module, name, value)
                else:
                    state.env[name] = value
            case ir.Seq(items):
                for t in items:
                    self.assign(t, frozenset({Data("unpacked")}), state, frame)
            case ir.Attr():
                self.assign_attr(target, value, state, frame)
            case ir.Sub(base_ir, index_ir):
                for base in ordered(self.eval(base_ir, state, frame)):
                    if isinstance(base, DictV) and index_ir is not None:
                        for key in self.eval(index_ir, state, frame):
                            dict_put(base, key, value)

    def assign_attr(self, target: ir.Attr, value: frozenset, state: State, frame: Frame) -> None:
        base_ir, attr, _ = target
        for base in map(bare, ordered(self.eval(base_ir, state, frame))):
            if isinstance(base, Obj):
                base.attrs[attr] = cap(base.attrs.get(attr, frozenset()) | value)
            elif isinstance(base, Module):
                env = self.module_globals(base.name)
                if env is not None:
                    if env.get(attr) != value:  # what ran before may now run differently
                        env[attr] = value
                        self.version += 1
                    self._patched(f"{base.name}.{attr}", base.name, value, state, frame)
            elif isinstance(base, Klass):
                attrs = self.class_attrs.setdefault(base, {})
                if attrs.get(attr) != value:
                    attrs[attr] = value
                    self.version += 1
                self._patched(f"{base.module}.{base.qualname}.{attr}", base.module, value, state, frame)

    def _patched(self, target: str, owner: str, value: frozenset, state: State, frame: Frame) -> None:
        """A monkeypatch: code of one module replacing a function or class of another."""
        if owner == frame.module:
            return
        for v in ordered(value):  # the document lists patches in the order they are found
            if isinstance(v, (Func, Klass)):
                q = python_qualname(v.qualname)
                p = AttrPatch(target, f"{v.module}.{q}", f"{v.module.rsplit('.', 1)[-1]}.{q}",
                          frame.node, level(state.status))
                key = (p.target, p.replacement, self.nodes[p.node].function, p.status)
                if key not in self._patch_keys:  # the same patch, installed again by a later pass
                    self._patch_keys.add(key)
                    self.patches.append(p)
