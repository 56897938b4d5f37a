"""The call graph, built by abstract interpretation from the entry points under a configuration.

Starting from entry code (rules data, or `--entry`), the interpreter walks the IR of the modules
it reaches: it binds imports lazily, follows calls into functions, methods (through `self`,
attributes set in `__init__`, class hierarchies), functions held in variables and returned by
functions, `functools.partial`, and executes attribute assignments to modules and classes as the
monkeypatches they are. Branch tests are evaluated under the effective config to formulas over
the configuration values it leaves unknown (`values.py`, `formula.py`); a branch that cannot be
taken is not walked, and what it would have called is recorded as blocked by that guard. Every
edge, site hit and patch carries the formula of the path to it. The result is a graph of (function, calling context) nodes,
edges with the guards on the way, the P2P sites hit in each node, and the patches installed.
"""

from __future__ import annotations

import builtins
import sys
import threading
from dataclasses import dataclass
from typing import Any

from auditor.rulebook.interpreter import Rules
from auditor.static.interp import typetests
from auditor.static.ir import ir
from auditor.static.exports import star_binds
from auditor.static.analyze import collector_paused
from auditor.static.interp.graph import Blocked, Cut, Edge, Guard, Hit, Node, Patch
from auditor.static.interp.program import Program
from auditor.static.interp.formula import FALSE, TRUE, conj, disj, level
from auditor.static.interp.state import Frame, State, guard_new_values, join, join_env
from auditor.static.interp.values import (
    DERIVED, MANY, MAX_CALLABLES, Api, Cfg, ConfigObject, Const, Cond, Data, DictV, Elements, External, Func,
    Group, Guarded, Klass, Module, Obj, bare, cap, compare, concrete, cond, describe, dict_get, dict_put,
    elements_of, ordered, truth_of,
)

# In entry code, `P2PAUDIT_INSTANCE(Cls)` is an instance of Cls whose __init__ never ran, and
# `P2PAUDIT_CALL(f)` calls f with every parameter unknown (defaults too: a caller may pass them).
INSTANCE = "P2PAUDIT_INSTANCE"
CALL_UNKNOWN = "P2PAUDIT_CALL"
# An empty `*args` (no positional argument left for it): `f(*args)` passes nothing on, so that
# `super().__init__(*args, **kwargs)` binds its callee's parameters from the keywords.
NO_ARGS = frozenset({Const(())})
# Case methods of a known string (a configured schedule name looked up case-insensitively).
_STR_CASE = frozenset({"lower", "upper", "casefold"})
ENTRY_PREFIX = "<entry"  # entry code runs as a module named `<entry N>`
MAX_LOOP_PASSES = 3  # walks of one loop body, while each installs new patches the next would see
MAX_DEPTH = 40  # nested calls being interpreted
MAX_IMPORT_DEPTH = 60  # nested module top levels being executed (an import chain)
MAX_NODES = 6000  # function contexts interpreted
# The interpreter recurses in Python once per call, import and nested statement; it runs on a
# thread of its own whose stack and recursion limit hold the budgets above with room to spare.
# Deeper still (pathological nesting) is a budget cut, never a crash.
PYTHON_DEPTH = 20_000
STACK_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class Lazy:
    """A name bound by `from module import attr`, resolved on first use."""

    module: str
    attr: str


class Interpreter:
    def __init__(self, program: Program, config: dict[str, Any], rules: Rules) -> None:
        self.program = program
        self.config = config  # key -> value; missing key = unknown
        self.rules = rules
        self.globals: dict[str, dict[str, frozenset]] = {}
        self.closures: dict[int, tuple[dict[str, frozenset], int]] = {}
        self.class_attrs: dict[Klass, dict[str, frozenset]] = {}  # patched class attributes
        self.nodes: list[Node] = []
        self.node_index: dict[tuple, int] = {}
        self.memo: dict[tuple, frozenset] = {}
        self.alloc_args: dict[tuple, set[tuple]] = {}  # the arguments each allocation site ran __init__ with
        self.active: set[tuple] = set()
        self.edges: list[Edge] = []
        self._by_caller: dict[int, list[Edge]] = {}
        self._indexed = 0  # edges[:_indexed] are in _by_caller
        self.hits: list[Hit] = []
        self.blocked: list[Blocked] = []
        self.patches: list[Patch] = []
        self._patch_keys: set[tuple[str, str, str, str]] = set()
        self.unresolved: dict[str, int] = {}
        self.mros: dict[Klass, list[Klass]] = {}
        self.open_classes: set[Klass] = set()  # a class in its hierarchy is not analysed
        # module -> (the modules it star-imports, in order; its literal __all__ or None)
        self.stars: dict[str, tuple[list[str], list[str] | None]] = {}
        self.reads: dict[tuple[int, int], tuple] = {}  # what a blocked branch reads, by IR list
        self.config_reads = 0
        self.version = 0
        self.depth = 0
        self.import_depth = 0
        self.cuts: list[Cut] = []  # in the order met; one per (function, budget)
        self._cut_keys: set[tuple[str, str]] = set()

    @property
    def exhausted(self) -> bool:
        """Did a budget leave something unwalked (then "not reached" proves nothing)."""
        return bool(self.cuts)

    def cut(self, module: str, qualname: str, budget: str, limit: int, node: int,
            caller: tuple[State, Frame] | None = None) -> None:
        function = f"{module}.{_python_qualname(qualname)}"
        if (function, budget) not in self._cut_keys:
            self._cut_keys.add((function, budget))
            self.cuts.append(Cut(function, budget, limit, node, caller[1].node if caller else None))

    def calls_from(self) -> dict[int, list[Edge]]:
        """The edges by caller, brought up to date with the edges added since the last call
        (probes add some): every reachability reads it, so it is built once."""
        for e in self.edges[self._indexed:]:
            self._by_caller.setdefault(e.caller, []).append(e)
        self._indexed = len(self.edges)
        return self._by_caller

    # --- nodes ---------------------------------------------------------------------------------

    def node(self, module: str, qualname: str, context: Any) -> int:
        key = (module, qualname, context)
        if key not in self.node_index:
            self.node_index[key] = len(self.nodes)
            self.nodes.append(Node(len(self.nodes), module, qualname, str(context)[:80]))
        return self.node_index[key]

    # --- modules -------------------------------------------------------------------------------

    def module_globals(self, name: str) -> dict[str, frozenset] | None:
        """Executes a module's top level on first use, parents first, as an import would."""
        if name in self.globals:
            return self.globals[name]
        if not self.program.has_module(name):
            return None
        node = self.node(name, "<module>", "import")
        if self.import_depth >= MAX_IMPORT_DEPTH:
            # Not registered: a shallower import of the same module runs it in full later.
            self.cut(name, "<module>", "MAX_IMPORT_DEPTH", MAX_IMPORT_DEPTH, node)
            return {}
        parent = name.rpartition(".")[0]
        if parent and self.program.has_module(parent):
            self.module_globals(parent)
        env: dict[str, frozenset] = {}
        self.globals[name] = env
        mod_ir = self.program.module(name)
        if mod_ir is None:
            return env
        self.import_depth += 1
        try:
            self.exec_namespace(mod_ir.body, env, Frame(node, name, 0, None, "module"))
            self._function_globals(name, mod_ir)
        except RecursionError:
            self.cut(name, "<module>", "PYTHON_DEPTH", PYTHON_DEPTH, node)
        finally:
            self.import_depth -= 1
        return env

    def _function_globals(self, module: str, mod_ir: ir.ModuleIR) -> None:
        """Module globals that functions assign under `global NAME` (DeepSpeed's backend object
        `cdb = TorchBackend(...)` in `deepspeed.comm.init_distributed`) may hold those values
        wherever they are read, whether or not the analysis walked the assigning function: each
        such assignment's value is added to the module's binding, computed with the function's
        own locals unknown, in a context of its own that no entry point reaches."""
        for qualname, assigned in mod_ir.global_assignments.items():
            frame = Frame(self.node(module, qualname, "global assignment"), module, 0, None)
            frame.global_names = {name for name, _ in assigned}
            for name, value_ir in assigned:
                self._assign_global(module, name, self.eval(value_ir, State({}), frame))

    def _assign_global(self, module: str, name: str, value: frozenset) -> None:
        """`global NAME; NAME = value` in a function: the module's binding may hold either."""
        env = self.module_globals(module)
        if env is None:
            return
        old = env.get(name, frozenset())
        # One object per class: each call of a function that allocates a new object (a
        # singleton getter re-run in another context) would otherwise change the binding again.
        held = {bare(v).cls for v in old if isinstance(bare(v), Obj)}
        added = {v for v in value if not (isinstance(bare(v), Obj) and bare(v).cls in held)} - old
        if added and MANY not in old:  # a binding already too wide to list stays so
            env[name] = cap(old | added)
            self.version += 1  # what read the old binding may now run differently

    def star_lookup(self, module: str, name: str) -> frozenset | None:
        """A name `module` gets from its `from X import *`, the last star import first, through
        chains of them; None when none binds it."""
        seen: set[str] = set()
        todo = [module]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            for source in reversed(self._star_sources(current)):
                env = self.module_globals(source)
                if env is None or not star_binds(name, self._star_all(source)):
                    continue
                if name in env:
                    return self._force(env[name])
                todo.append(source)
        return None

    def _star_sources(self, module: str) -> list[str]:
        if module not in self.stars:
            mod = self.program.module(module)
            self.stars[module] = ir.star_imports(mod) if mod is not None else ([], None)
        return self.stars[module][0]

    def _star_all(self, module: str) -> list[str] | None:
        self._star_sources(module)
        return self.stars[module][1]

    def run_module_ir(self, name: str, mod_ir: ir.ModuleIR) -> int:
        """Runs entry code (a snippet from the rules or --entry) as a module of its own."""
        return _on_deep_stack(self._run_module_ir, name, mod_ir)

    def _run_module_ir(self, name: str, mod_ir: ir.ModuleIR) -> int:
        self.program.loaded[name] = mod_ir
        self.program.where.pop(name, None)
        env: dict[str, frozenset] = {}
        self.globals[name] = env
        node = self.node(name, "<module>", "entry")
        self.exec_namespace(mod_ir.body, env, Frame(node, name, 0, None, "module"))
        return node

    def function_ir(self, func: Func) -> ir.FunctionIR | None:
        mod = self.program.module(func.module)
        return mod.functions.get(func.qualname) if mod else None

    def class_ir(self, k: Klass) -> ir.ClassIR | None:
        mod = self.program.module(k.module)
        return mod.classes.get(k.qualname) if mod else None

    # --- statements ----------------------------------------------------------------------------

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
                    frame.returns.add(Const(None))
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
        self.closures[id(state.env)] = (state.env, frame.closure)
        return id(state.env)

    def import_value(self, local: str, target: str, is_module: bool) -> Any:
        if is_module:
            head = target if local != target.split(".")[0] else target.split(".")[0]
            self.program.prefetch(head)
            return Module(head) if self.program.has_module(head) else External(head)
        module, _, attr = target.rpartition(".")
        self.program.prefetch(module)
        if self.program.has_module(target):
            self.program.prefetch(target)
            return Module(target)
        if self.program.has_module(module):
            return Lazy(module, attr)
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
                funcs.add(f"{v.module}.{_python_qualname(v.qualname)}")
        funcs |= {f"{frame.module}.{_python_qualname(qualname)}" for qualname in defs}
        if funcs or sites:
            self.blocked.append(Blocked(frame.node, guards, frozenset(funcs), frozenset(sites)))

    # --- assignment ----------------------------------------------------------------------------

    def assign(self, target: ir.Expr, value: frozenset, state: State, frame: Frame) -> None:
        if isinstance(target, ir.Site):
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
                q = _python_qualname(v.qualname)
                p = Patch(target, f"{v.module}.{q}", f"{v.module.rsplit('.', 1)[-1]}.{q}",
                          frame.node, level(state.status))
                key = (p.target, p.replacement, self.nodes[p.node].function, p.status)
                if key not in self._patch_keys:  # the same patch, installed again by a later pass
                    self._patch_keys.add(key)
                    self.patches.append(p)

    # --- expressions ---------------------------------------------------------------------------

    def eval(self, e: ir.Expr | None, state: State, frame: Frame) -> frozenset:
        match e:
            case None:
                return frozenset({Const(None)})
            case ir.Const(value):
                return frozenset({Const(value)})
            case ir.Name(name):
                return self.lookup(name, state, frame)
            case ir.Attr():
                return self.eval_attr(e, state, frame)
            case ir.Call():
                return self.eval_call(e, state, frame)
            case ir.Site(site, inner):
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
                for item in items:
                    self.eval(item, state, frame)
                return frozenset({Data("sequence")})
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
                dict_put(d, k, cap(dict_get(d, k) | value) if isinstance(bare(k), Const) else value)
        return frozenset({d})

    def _comp_loops(self, e: ir.Comp, i: int, inner: State, frame: Frame,
                    pairs: list[tuple[frozenset, frozenset]]) -> None:
        if i == len(e.loops):
            keys = self.eval(e.key, inner, frame) if e.key is not None else frozenset()
            pairs.append((keys, self.eval(e.value, inner, frame)))
            return
        target, iterable, tests = e.loops[i]
        items = elements_of(self.eval(iterable, inner, frame))
        one_by_one = all(isinstance(bare(v), Const) for v in items) and len(items) <= MAX_CALLABLES
        for part in ([frozenset({v}) for v in ordered(items)] if one_by_one else [items]):
            if isinstance(target, ir.Name):
                inner.env[target.id] = part
            else:
                self.assign(target, part, inner, frame)
            for test in tests:
                self.eval(test, inner, frame)
            self._comp_loops(e, i + 1, inner, frame, pairs)

    def eval_compare(self, e: ir.Cmp, state: State, frame: Frame) -> Any:
        left = self.eval(e.left, state, frame)
        result = Cond(TRUE, FALSE)
        for op, right_ir in e.ops:
            right = self.eval(right_ir, state, frame)
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
        if name in (INSTANCE, CALL_UNKNOWN):
            return frozenset({External(name)})
        if name == "super" and frame.cls is not None:
            return frozenset({External("builtins.super")})
        if name in self.rules.config_names:
            return frozenset({ConfigObject()})
        if name in self.rules.group_names:
            return frozenset({Group(self.rules.group_names[name])})
        if hasattr(builtins, name):
            return frozenset({External(f"builtins.{name}")})
        return frozenset({Data(f"unbound {name}")})

    def _force(self, values: frozenset) -> frozenset:
        """Resolves `from m import x` bindings, following chains of them iteratively (a package
        re-exporting a name it imports from itself makes a cycle, which resolves to nothing)."""
        if not any(isinstance(v, Lazy) for v in values):
            return values
        out: set = set()
        seen: set[Lazy] = set()
        todo = list(reversed(ordered(values)))
        while todo:
            v = todo.pop()
            if not isinstance(v, Lazy):
                out.add(v)
                continue
            if v in seen:
                continue
            seen.add(v)
            env = self.module_globals(v.module)
            if env is not None and v.attr in env:
                todo.extend(reversed(ordered(env[v.attr])))
            elif self.program.has_module(f"{v.module}.{v.attr}"):
                out.add(Module(f"{v.module}.{v.attr}"))
            else:
                out.add(Data(f"{v.module}.{v.attr}"))
        return cap(frozenset(out)) if out else frozenset({Data("import cycle")})

    def eval_attr(self, e: ir.Attr, state: State, frame: Frame) -> frozenset:
        base_ir, attr, _ = e
        text = ir.dotted(e)
        if text in self.rules.config_names:
            return frozenset({ConfigObject()})
        bases = self.eval(base_ir, state, frame)
        out: set = set()
        for b in ordered(bases):
            out |= self.attr_of(b, attr, ir.dotted(base_ir))
        return cap(frozenset(out))

    def attr_of(self, b: Any, attr: str, base_text: str | None) -> frozenset:
        if isinstance(b, Guarded):
            return frozenset(Guarded(bare(v), b.status) for v in self.attr_of(b.value, attr, base_text))
        if isinstance(b, Module):
            env = self.module_globals(b.name)
            if env is not None and attr in env:
                return self._force(env[attr])
            if self.program.has_module(f"{b.name}.{attr}"):
                return frozenset({Module(f"{b.name}.{attr}")})
            starred = self.star_lookup(b.name, attr) if env is not None else None
            return starred if starred is not None else frozenset({Data(f"{b.name}.{attr}")})
        if isinstance(b, External):
            q = f"{b.qualname}.{attr}"
            if q in self.rules.world_groups:
                return frozenset({Group("world")})
            return frozenset({Api(self.rules.api_qualnames[q])} if q in self.rules.api_qualnames
                             else {External(q)})
        if isinstance(b, ConfigObject) or (base_text in self.rules.config_names):
            return frozenset({self.config_value(attr)})
        if isinstance(b, Obj):
            if attr in b.attrs:
                return self._named_group(attr, b.attrs[attr])
            found = self.class_lookup(b.cls, attr)
            if found is not None:
                owner, values = found
                return self._bind(values, b, owner)
            if attr in self.rules.group_names:
                return frozenset({Group(self.rules.group_names[attr])})
            return frozenset({Data(f"{b.cls.qualname}.{attr}")})
        if isinstance(b, Klass):
            found = self.class_lookup(b, attr)
            return found[1] if found is not None else frozenset({Data(f"{b.qualname}.{attr}")})
        if isinstance(b, _Super):
            out: set = set()
            for cls in self.mro(Klass(b.cls, b.module))[1:]:
                cenv = {**self.class_env(cls), **self.class_attrs.get(cls, {})}
                if attr in cenv:
                    for obj in ordered(b.self_values):
                        out |= self._bind(cenv[attr], obj, cls) if isinstance(obj, Obj) else cenv[attr]
                    break
            return frozenset(out) or frozenset({Data(f"super().{attr}")})
        if attr in self.rules.group_names:
            return frozenset({Group(self.rules.group_names[attr])})
        return frozenset({Data(f".{attr}")})

    def _named_group(self, name: str, values: frozenset) -> frozenset:
        """An unknown value held under a name like `pp_group` is taken for that group."""
        dim = self.rules.group_names.get(name)
        if dim is not None and values and all(isinstance(bare(v), Data) for v in values):
            return frozenset({Group(dim)})
        return values

    def config_value(self, key: str) -> Cfg:
        self.config_reads += 1
        if key in self.config:
            return Cfg(key, True, self.config[key])
        return Cfg(key, False)

    def _bind(self, values: frozenset, obj: Obj, owner: Klass) -> frozenset:
        out: set = set()
        for v in ordered(values):
            if isinstance(v, Func):
                fir = self.function_ir(v)
                decos = ir.decorator_names(fir)
                if "staticmethod" in decos:
                    out.add(v)
                elif "property" in decos or "cached_property" in decos:
                    out |= self.call_function(Func(v.qualname, v.module, v.closure, obj), [], {}, None)
                else:
                    out.add(Func(v.qualname, v.module, v.closure, obj))
            else:
                out.add(v)
        return cap(frozenset(out))

    def mro(self, k: Klass) -> list[Klass]:
        """Depth-first, left to right: close to C3 for the hierarchies met in practice."""
        cached = self.mros.get(k)
        if cached is not None:
            return cached
        seen: list[Klass] = []
        stack = [k]
        while stack:
            cur = stack.pop(0)
            if cur in seen:
                continue
            seen.append(cur)
            cir = self.class_ir(cur)
            if cir is None:
                self.open_classes.add(k)
                continue
            env = self.module_globals(cur.module) or {}
            frame = Frame(self.node(cur.module, "<module>", "import"), cur.module, 0, None, "module")
            for base_ir in cir.bases:
                for b in ordered(self.eval(base_ir, State(env), frame)):
                    if isinstance(b, Klass):
                        stack.append(b)
                    elif b != External("builtins.object"):
                        self.open_classes.add(k)
        self.mros[k] = seen
        return seen

    def closed(self, k: Klass) -> bool:
        """Every class of k's hierarchy is analysed and has analysed bases and no metaclass, so
        `isinstance` and `issubclass` answer as the hierarchy says (`typetests`)."""
        self.mro(k)
        return k not in self.open_classes

    def defines(self, k: Klass, attr: str) -> bool:
        """A class body of k's hierarchy binds attr (assignments at run time are not counted)."""
        return any(attr in self.class_env(cls) for cls in self.mro(k))

    def class_lookup(self, k: Klass, attr: str) -> tuple[Klass, frozenset] | None:
        for cls in self.mro(k):
            patched = self.class_attrs.get(cls, {})
            if attr in patched:
                return cls, patched[attr]
            cenv = self.class_env(cls)
            if attr in cenv:
                return cls, cenv[attr]
        return None

    def class_env(self, k: Klass) -> dict[str, frozenset]:
        key = f"class:{k.module}.{k.qualname}"
        if key in self.globals:
            return self.globals[key]
        env: dict[str, frozenset] = {}
        self.globals[key] = env
        cir = self.class_ir(k)
        if cir is not None:
            frame = Frame(self.node(k.module, "<module>", "import"), k.module, 0, k.qualname, "class")
            self.exec_namespace(cir.body, env, frame)
        return env

    # --- calls ---------------------------------------------------------------------------------

    def eval_call(self, e: ir.Call, state: State, frame: Frame) -> frozenset:
        return self._call(e, state, frame)[0]

    def _call(self, e: ir.Call, state: State, frame: Frame) -> tuple[frozenset, list, dict, frozenset]:
        """(result, evaluated positional args, keyword args, receiver values of a method call)"""
        func_ir, args_ir, kwargs_ir, star_ir, dstar_ir, text, _ = e
        args = [self.eval(a, state, frame) for a in args_ir]
        kwargs = {k: self.eval(v, state, frame) for k, v in kwargs_ir.items()}
        if star_ir is not None and self.eval(star_ir, state, frame) != NO_ARGS:
            args.append(frozenset({Data("*args")}))
        if dstar_ir is not None:
            for d in self.eval(dstar_ir, state, frame):
                if isinstance(d, DictV):
                    for k, v in d.items.items():
                        kwargs.setdefault(k, frozenset())
                        kwargs[k] = cap(kwargs[k] | v)
        bases: frozenset = frozenset()
        if isinstance(func_ir, ir.Attr):
            bases = self.eval(func_ir.base, state, frame)
            if any(isinstance(bare(b), Group) for b in bases):
                return self._group_method(bases, func_ir.attr), args, kwargs, bases
            if func_ir.attr in _STR_CASE and not args and not kwargs and bases:
                known = [concrete(b) for b in bases]
                if all(k and isinstance(v, str) for k, v in known):
                    return frozenset(Const(getattr(v, func_ir.attr)()) for _, v in known), args, kwargs, bases
            callees: set = set()
            for b in ordered(bases):
                callees |= self.attr_of(b, func_ir.attr, ir.dotted(func_ir.base))
            callees_fs = cap(frozenset(callees))
        else:
            callees_fs = self.eval(func_ir, state, frame)
        test = typetests.test_name(next(iter(callees_fs))) if len(callees_fs) == 1 else None
        if test is not None:
            specs = None
            if len(args_ir) == 2 and isinstance(args_ir[1], ir.Seq):
                specs = [self.eval(item, state, frame) for item in args_ir[1].items]
            return typetests.decide(test, args, specs, self), args, kwargs, bases
        out: set = set()
        for callee in ordered(callees_fs):
            out |= self.call_value(callee, args, kwargs, state, frame, text)
        result = cap(frozenset(out)) if out else frozenset({Data("call")})
        return result, args, kwargs, bases

    def _group_method(self, bases: frozenset, method: str) -> frozenset:
        out: set = set()
        for b in map(bare, bases):
            if isinstance(b, Group) and method == "size":
                key = self.rules.group_sizes.get(b.dim)
                out.add(self.config_value(key) if key else Data("size"))
            else:
                out.add(Data(method))
        return frozenset(out)

    def call_value(self, callee: Any, args: list, kwargs: dict, state: State, frame: Frame,
                   text: str) -> frozenset:
        if isinstance(callee, Guarded):
            weaker = State(state.env, state.guards, conj(state.status, callee.status))
            return frozenset(Guarded(bare(v), callee.status) for v in
                             self.call_value(callee.value, args, kwargs, weaker, frame, text))
        if isinstance(callee, Func):
            symbol = self.rules.symbols.get(f"{callee.module}.{callee.qualname}")
            if symbol is not None:
                return self.symbol_value(symbol)
            return self.call_function(callee, args, kwargs, (state, frame))
        if isinstance(callee, Klass):
            return self.construct(callee, args, kwargs, state, frame, text)
        if isinstance(callee, External):
            symbol = self.rules.symbols.get(callee.qualname)
            if symbol is not None:
                return self.symbol_value(symbol)
            if callee.qualname == "functools.partial" and args:
                return frozenset(
                    Func(f.qualname, f.module, f.closure, f.bound, (tuple(args[1:]), tuple(sorted(kwargs.items(), key=lambda kv: kv[0]))))
                    for f in args[0] if isinstance(f, Func)
                ) or frozenset({Data("partial")})
            if callee.qualname == "types.MethodType" and len(args) >= 2:
                # `MethodType(self._INSTRUCTION_MAP[type(cmd)], self)`: the functions, bound.
                return frozenset(
                    Func(f.qualname, f.module, f.closure, obj, f.partial)
                    for f in map(bare, args[0]) if isinstance(f, Func)
                    for obj in map(bare, args[1]) if isinstance(obj, Obj)
                ) or frozenset({Data("method")})
            if callee.qualname == INSTANCE and args:
                return frozenset(Obj(k, "entry") for k in args[0] if isinstance(k, Klass))
            if callee.qualname == CALL_UNKNOWN and args:
                out: set = set()
                for f in map(bare, ordered(args[0])):
                    if isinstance(f, Func):
                        out |= self._invoke(f, [], {}, (state, frame), unknown_args=True)[0]
                    else:
                        out |= self.call_value(f, [], {}, state, frame, text)
                return cap(frozenset(out)) if out else frozenset({Data("call")})
            if callee.qualname == "builtins.super" and frame.cls is not None:
                return frozenset({_Super(frame.cls, frame.module, frame.self_values)})
            return frozenset({Data(callee.qualname)})
        if isinstance(callee, _Super):
            return frozenset({callee})
        if isinstance(callee, (Api, Group, ConfigObject, Cfg, Const)):
            return frozenset({Data("result")})
        self.unresolved[text] = self.unresolved.get(text, 0) + 1
        return frozenset({Data(f"call {text}")})

    def symbol_value(self, symbol: dict[str, Any]) -> frozenset:
        if "config" in symbol:
            return frozenset({self.config_value(symbol["config"])})
        if "group" in symbol:
            return frozenset({Group(symbol["group"])})
        if symbol.get("returns") == "config":
            return frozenset({ConfigObject()})
        return frozenset({Data(symbol.get("returns", "symbol"))})

    def construct(self, k: Klass, args: list, kwargs: dict, state: State, frame: Frame,
                  text: str) -> frozenset:
        key = ("alloc", frame.node, text, k)
        # One object per allocation site; a site reached again with other arguments (torchtitan's
        # `schedule_class(stages, ...)` and `schedule_class(stages[0], ...)` in two branches)
        # runs __init__ again on it, so that its attributes hold what either call gave.
        seen = self.alloc_args.setdefault(key, set())
        arguments = (tuple(_key(a) for a in args), tuple(sorted((n, _key(v)) for n, v in kwargs.items())))
        if key in self.memo and arguments in seen:
            return self.memo[key]
        seen.add(arguments)
        if key not in self.memo:
            self.memo[key] = frozenset({Obj(k, f"{self.nodes[frame.node].function}:{text}")})
        (obj,) = self.memo[key]
        found = self.class_lookup(k, "__init__")
        if found is not None:
            owner, inits = found
            for init in ordered(inits):
                if isinstance(init, Func):
                    self.call_function(Func(init.qualname, init.module, init.closure, obj),
                                       args, kwargs, (state, frame))
        return frozenset({obj})

    def call_function(self, func: Func, args: list, kwargs: dict,
                      caller: tuple[State, Frame] | None) -> frozenset:
        return self._invoke(func, args, kwargs, caller)[0]

    def probe(self, module: str, qualname: str) -> int | None:
        """Interprets one function on its own, with unknown arguments (methods get an instance
        whose attributes are unknown): what its own guards allow, whoever calls it."""
        mod = self.program.module(module)
        fir = mod.functions.get(qualname) if mod else None
        if fir is None:
            return None
        bound = None
        if fir.method:
            bound = Obj(Klass(qualname.rsplit(".", 1)[0], module), "probe")
        func = Func(qualname, module, 0, bound)
        return _on_deep_stack(self._invoke, func, [], {}, None, True)[1]

    def _invoke(self, func: Func, args: list, kwargs: dict, caller: tuple[State, Frame] | None,
                unknown_args: bool = False) -> tuple[frozenset, int | None]:
        fir = self.function_ir(func)
        if fir is None:
            return frozenset({Data(func.qualname)}), None
        if func.partial:
            pargs, pkwargs = func.partial
            args = [*pargs, *args]
            kwargs = {**dict(pkwargs), **kwargs}
        env = self.bind(fir, func, args, kwargs, unknown_args)
        context = (func.closure, id(func.bound) if func.bound is not None else 0,
                   tuple(sorted((k, _key(v)) for k, v in env.items())), self.version)
        memo_key = (func.module, func.qualname, context)
        node = self.node(func.module, fir.qualname, hash(context) & 0xFFFFFF)
        if caller is not None:
            cstate, cframe = caller
            self.edges.append(Edge(cframe.node, node, cstate.status, cstate.guards))
        if memo_key in self.memo:
            return self.memo[memo_key], node
        if memo_key in self.active:  # recursion: the outer call walks this body
            return frozenset({Data("recursion")}), node
        if self.depth >= MAX_DEPTH or len(self.nodes) > MAX_NODES:
            budget, limit = ("MAX_DEPTH", MAX_DEPTH) if self.depth >= MAX_DEPTH else ("MAX_NODES", MAX_NODES)
            self.cut(func.module, func.qualname, budget, limit, node, caller)
            return frozenset({Data("not analysed")}), node
        self.active.add(memo_key)
        self.depth += 1
        cls = func.qualname.rsplit(".", 1)[0] if fir.method else None
        frame = Frame(node, func.module, func.closure, cls)
        if cls is not None and fir.params:
            frame.self_values = env.get(fir.params[0].name, frozenset())
        state = State(env)
        try:
            self.exec_block(fir.body, state, frame)
        except RecursionError:
            self.cut(func.module, func.qualname, "PYTHON_DEPTH", PYTHON_DEPTH, node, caller)
            return frozenset({Data("not analysed")}), node
        finally:
            self.depth -= 1
            self.active.discard(memo_key)
        result = cap(frozenset(frame.returns)) if frame.returns else frozenset({Const(None)})
        self.memo[memo_key] = result
        return result, node

    def bind(self, fir: ir.FunctionIR, func: Func, args: list, kwargs: dict,
             unknown_args: bool = False) -> dict[str, frozenset]:
        """Parameters from the call's arguments, else their defaults; with `unknown_args` (a
        probe: nobody's call) every parameter is unknown, whatever its default."""
        env: dict[str, frozenset] = {}
        params = list(fir.params)
        positional = list(args)
        decos = ir.decorator_names(fir)
        if fir.method and "staticmethod" not in decos and params:
            first = params.pop(0).name
            if func.bound is not None:
                env[first] = frozenset({func.bound})
            elif positional:
                env[first] = positional.pop(0)
            else:
                env[first] = frozenset({Data("self")})
        extra_kwargs = dict(kwargs)
        for name, default, kind, _ in params:
            if kind == "pos" and positional:
                env[name] = self._named_group(name, positional.pop(0))
                extra_kwargs.pop(name, None)
            elif kind in ("pos", "kwonly") and name in kwargs:
                env[name] = self._named_group(name, extra_kwargs.pop(name))
            elif kind == "star":  # the tuple is empty where no positional argument is left
                env[name] = frozenset({Data("*args")}) if positional or unknown_args else NO_ARGS
            elif kind == "dstar":
                env[name] = frozenset({DictV(dict(extra_kwargs))})
            elif default is not None and not unknown_args:
                gframe = Frame(0, func.module, 0, None, "module")
                env[name] = self.eval(default, State(self.module_globals(func.module) or {}), gframe)
            elif name in self.rules.group_names:
                env[name] = frozenset({Group(self.rules.group_names[name])})
            else:
                env[name] = frozenset({Data(f"param {name}")})
        return env

    def _hit_groups(self, site_id: str, args: list, kwargs: dict, receivers: frozenset) -> tuple[str, ...]:
        """The process group(s) the op will use, as far as known here."""
        api = site_id.rsplit(":", 2)[-2]
        entry = self.rules.api_params.get(api)
        if entry is None:  # a ProcessGroup method: the receiver is the group
            return tuple(sorted({describe(v) for v in receivers}))
        group_param = entry.get("group")
        if group_param is None:
            return ()
        params = entry.get("params", [])
        if group_param in kwargs:
            values = kwargs[group_param]
        elif group_param in params and params.index(group_param) < len(args):
            values = args[params.index(group_param)]
        else:
            values = frozenset({Const(None)})
        return tuple(sorted({describe(v) for v in values}))


def _on_deep_stack(fn: Any, *args: Any) -> Any:
    """Runs `fn(*args)` on a thread whose stack holds PYTHON_DEPTH frames, the recursion limit
    raised to that for the call; the caller waits. Exceptions come back as raised."""
    out: list = []

    def run() -> None:
        try:
            out.append((True, fn(*args)))
        except BaseException as exc:  # handed to the caller, which re-raises it
            out.append((False, exc))

    limit = sys.getrecursionlimit()
    size = threading.stack_size(STACK_BYTES)
    try:
        sys.setrecursionlimit(max(limit, PYTHON_DEPTH))
        worker = threading.Thread(target=run, name="p2paudit-interpreter", daemon=True)
        # The walk allocates many objects that outlive it (the IR read back, states, the graph)
        # while the analysis cache's data fills the heap: each full collection it would start
        # walks all of that (~1/3 of a warm scan). What cycles it leaves are collected after.
        with collector_paused():
            worker.start()
            worker.join()
    finally:
        threading.stack_size(size)
        sys.setrecursionlimit(limit)
    ok, value = out[0]
    if not ok:
        raise value
    return value


@dataclass(frozen=True)
class _Super:
    cls: str
    module: str
    self_values: frozenset


def _key(values: frozenset) -> tuple:
    out: list[Any] = []
    for v in values:
        if isinstance(v, DictV):
            out.append(("dict", tuple(sorted((k, _key(x)) for k, x in v.items.items())),
                        tuple(sorted((repr(k), _key(x)) for k, x in v.keyed.items())), _key(v.anykey)))
        elif isinstance(v, Elements):
            out.append(("elements", _key(v.values)))
        elif isinstance(v, Obj):
            out.append(("obj", id(v)))
        elif isinstance(v, Data):
            out.append(("data",))
        else:
            out.append(v)
    return tuple(sorted(out, key=repr))


def _python_qualname(key: str) -> str:
    """The IR stores a second definition of a name as `name#2`; Python calls both `name`."""
    return key.split("#", 1)[0]
