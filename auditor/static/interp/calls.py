"""Calls and binding: what a call's callees are, builtin type tests, the rules' symbols,
`functools.partial`, `types.MethodType`, classes constructed (one object per allocation site),
functions invoked once per calling context under the budgets, parameters bound from the
arguments, and the process groups a P2P site's call uses."""

from __future__ import annotations

from typing import Any

from auditor.static.interp import typetests
from auditor.static.interp.formula import conj
from auditor.static.interp.graph import Edge
from auditor.static.interp.shared import (
    CALL_UNKNOWN, INSTANCE, MAX_DEPTH, MAX_NODES, MAX_RECURSION, NO_ARGS, PYTHON_DEPTH, InterpreterCore, ReachedStop,
    identity, value_key,
)
from auditor.static.interp.state import Frame, State
from auditor.static.interp.values import (
    Api, Cfg, ConfigObject, ConstValue, Data, DictV, Elements, External, Func, GroupValue, Guarded, Klass, Obj,
    _Super, bare, cap, concrete, describe, elements_of, ordered,
)
from auditor.static.ir import ir

# Builtins whose result iterates over its one argument's elements (`reversed(stages)`).
_SAME_ELEMENTS = frozenset(f"builtins.{n}" for n in ("reversed", "list", "tuple", "sorted", "set", "frozenset", "iter"))
# Builtins that never call a value handed to them (a computed getattr's result printed, a
# class tested by `isinstance`).
_NEVER_CALL = frozenset(f"builtins.{n}" for n in (
    "print", "str", "repr", "format", "len", "bool", "isinstance", "issubclass", "hasattr", "callable", "id"))
# Outside code that records a class handed to it, never builds it (`typing.TypeVar("T",
# bound=Model)`, `typing.cast(Model, x)`); a builtin may build it (`map(Step, xs)`).
_KEEPS_CLASSES = frozenset({"typing"})
# Case methods of a known string (a configured schedule name looked up case-insensitively).
_STR_CASE = frozenset({"lower", "upper", "casefold"})


class Calls(InterpreterCore):
    def eval_call(self, e: ir.Call, state: State, frame: Frame) -> frozenset:
        return self._call(e, state, frame)[0]

    def _call(self, e: ir.Call, state: State, frame: Frame) -> tuple[frozenset, list, dict, frozenset]:
        """(result, evaluated positional args, keyword args, receiver values of a method call)"""
        func_ir, args_ir, kwargs_ir, star_ir, dstar_ir, text, _ = e
        quiet = isinstance(func_ir, ir.Name) and self._never_calls(func_ir.id, state, frame)
        args = [self.eval_read(a, state, frame) if quiet else self.eval(a, state, frame) for a in args_ir]
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
            if any(isinstance(bare(b), GroupValue) for b in bases):
                return self._group_method(bases, func_ir.attr), args, kwargs, bases
            if func_ir.attr in _STR_CASE and not args and not kwargs and bases:
                known = [concrete(b) for b in bases]
                if all(k and isinstance(v, str) for k, v in known):
                    return frozenset(ConstValue(getattr(v, func_ir.attr)()) for _, v in known), args, kwargs, bases
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
            self.read_now = e is self.read_only  # a call before may have cleared it
            out |= self.call_value(callee, args, kwargs, state, frame, text)
        self.read_now = False
        result = cap(frozenset(out)) if out else frozenset({Data("call")})
        return result, args, kwargs, bases

    def _group_method(self, bases: frozenset, method: str) -> frozenset:
        out: set = set()
        for b in map(bare, bases):
            if isinstance(b, GroupValue) and method == "size":
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
        if isinstance(callee, (Func, Klass, External)):
            self._note_called(callee)
        if isinstance(callee, Func):
            symbol = self.rules.symbols.get(f"{callee.module}.{callee.qualname}")
            if symbol is not None and _answers(symbol, args, kwargs):
                return self.symbol_value(symbol)
            return self.call_function(callee, args, kwargs, (state, frame))
        if isinstance(callee, Klass):
            return self.construct(callee, args, kwargs, state, frame, text)
        if isinstance(callee, External):
            symbol = self.rules.symbols.get(callee.qualname)
            if symbol is not None and _answers(symbol, args, kwargs):
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
            if callee.qualname == "typing.cast" and len(args) == 2:
                return args[1]  # `cast(list[PipelineStage], stages)` is `stages`
            if callee.qualname in _SAME_ELEMENTS and len(args) == 1 and not kwargs:
                return frozenset({Elements(elements_of(args[0]))})
            if self.stop_at:
                if callee.qualname == "builtins.getattr" and len(args) >= 2:
                    return self._getattr(args, text, frame.module, self.read_now)
                self._handed_out(callee.qualname, [*args, *kwargs.values()], state, frame)
            return frozenset({Data(callee.qualname)})
        if isinstance(callee, _Super):
            return frozenset({callee})
        if isinstance(callee, (Api, GroupValue, ConfigObject, Cfg, ConstValue)):
            return frozenset({Data("result")})
        if self.stop_at:  # a callee not resolved may run the read code it is handed, as outside code does
            self._handed_out(text, [*args, *kwargs.values()], state, frame)
        self.unresolved[text] = self.unresolved.get(text, 0) + 1
        return frozenset({Data(f"call {text}")})

    def _getattr(self, args: list, text: str, module: str, read_only: bool) -> frozenset:
        """`getattr(obj, "name"[, default])`: the attribute, so that a call of it is followed.
        A name not known here may be any attribute, a schedule's entry too, and its value is
        not tracked: the walk is `unseen`, unless the expression only is read, by its syntax
        (`read_only`: an argument of a builtin that never calls it, an operand of a comparison)."""
        names = [concrete(v) for v in args[1]]
        if not all(known and isinstance(name, str) for known, name in names):
            if not read_only:
                self.unseen.add((module, text))
            return cap(frozenset({Data("builtins.getattr"), *(args[2] if len(args) > 2 else ())}))
        out: set = set(args[2]) if len(args) > 2 else set()
        for b in ordered(args[0]):
            for _, name in names:
                out |= self.attr_of(b, name, None)
        return cap(frozenset(out)) if out else frozenset({Data("builtins.getattr")})

    def _handed_out(self, outside: str, values: list[frozenset], state: State, frame: Frame) -> None:
        """Functions of the read code among the arguments of a call into code not read (in a
        sequence or dict too) run there with arguments unknown here (`mp.spawn(worker)`,
        `Thread(target=worker)`): each is walked so. A class handed out may be built and its
        methods called there (not by a builtin, which only tests it): `unseen`."""
        seen: set[tuple[int, Any]] = set()  # held, so that a value walked keeps its address
        while values:
            for v in map(bare, ordered(values.pop())):
                if identity(v) in seen:
                    continue
                seen.add(identity(v))
                if isinstance(v, Elements):
                    values.append(v.values)
                elif isinstance(v, DictV):
                    values += [*v.items.values(), *v.keyed.values(), v.anykey]
                elif isinstance(v, Func):
                    self._note_called(v)
                    self._invoke(v, [], {}, (state, frame), unknown_args=True)
                elif isinstance(v, Klass) and outside not in _NEVER_CALL and outside.split(".")[0] not in _KEEPS_CLASSES:
                    self.unseen.add((frame.module, f"{outside}({v.qualname})"))

    def _never_calls(self, name: str, state: State, frame: Frame) -> bool:
        """Whether the callee named `name` is a builtin that never calls what it is handed."""
        values = self.lookup_quiet(name, state, frame)
        return bool(values) and all(isinstance(v, External) and v.qualname in _NEVER_CALL for v in values)

    def eval_read(self, e: ir.Expr, state: State, frame: Frame) -> frozenset:
        """`e`, evaluated where its value only is read (see _getattr)."""
        outer, self.read_only = self.read_only, e
        try:
            return self.eval(e, state, frame)
        finally:
            self.read_only = outer

    def _note_called(self, callee: Func | Klass | External) -> None:
        if isinstance(callee, External):
            self.outside.add(callee.qualname)
            name = callee.qualname
        else:
            name = f"{callee.module}.{callee.qualname}"
        if name in self.stop_at:
            raise ReachedStop(name)

    def symbol_value(self, symbol: dict[str, Any]) -> frozenset:
        if "constant" in symbol:  # a stage predicate at the settings it holds under
            return frozenset({ConstValue(symbol["constant"])})
        if "config" in symbol:
            return frozenset({self.config_value(symbol["config"])})
        if "group" in symbol:
            return frozenset({GroupValue(symbol["group"])})
        if symbol.get("returns") == "config":
            return frozenset({ConfigObject()})
        returns = str(symbol.get("returns", "symbol"))
        if returns.startswith("instance "):  # an instance of a class whose __init__ never ran
            module, _, name = returns.removeprefix("instance ").rpartition(".")
            klasses = [k for k in (self.module_globals(module) or {}).get(name, ()) if isinstance(k, Klass)]
            if klasses:
                key = ("symbol", returns)  # one object, however often the call is met
                if key not in self.memo:
                    self.memo[key] = frozenset(Obj(k, "symbol") for k in klasses)
                return self.memo[key]
        return frozenset({Data(returns)})

    def construct(self, k: Klass, args: list, kwargs: dict, state: State, frame: Frame,
                  text: str) -> frozenset:
        key = ("alloc", frame.node, text, k)
        # One object per allocation site; a site reached again with other arguments (torchtitan's
        # `schedule_class(stages, ...)` and `schedule_class(stages[0], ...)` in two branches)
        # runs __init__ again on it, so that its attributes hold what either call gave.
        seen = self.alloc_args.setdefault(key, set())
        arguments = (tuple(value_key(a) for a in args), tuple(sorted((n, value_key(v)) for n, v in kwargs.items())))
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
        walking = (func.module, func.qualname, func.closure)
        if self.walking.get(walking, 0) >= MAX_RECURSION:
            env = self.widened(fir, func, env)
        context = (func.closure, identity(func.bound) if func.bound is not None else 0,
                   tuple(sorted((k, value_key(v)) for k, v in env.items())), self.version)
        memo_key = (func.module, func.qualname, context)
        node = self.node(func.module, fir.qualname, context, f"{hash(context) & 0xFFFFFF:06x}")
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
        self.walking[walking] = self.walking.get(walking, 0) + 1
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
            self.walking[walking] -= 1
            self.active.discard(memo_key)
        result = cap(frozenset(frame.returns)) if frame.returns else frozenset({ConstValue(None)})
        self.memo[memo_key] = result
        return result, node

    def widened(self, fir: ir.FunctionIR, func: Func, env: dict[str, frozenset]) -> dict[str, frozenset]:
        """`env` with every parameter but the receiver unknown: a recursion whose calls each
        bring new values (torch's `install_config_module` allocates a proxy per level) would
        otherwise be a new context per level until MAX_DEPTH cuts it; widened, the next level
        has this context and is the recursion the outer call walks."""
        out = self.bind(fir, func, [], {}, True)
        for name, _, kind, _ in fir.params:
            if kind == "dstar":
                out[name] = frozenset({Data("**kwargs")})
        if fir.method and fir.params and "staticmethod" not in ir.decorator_names(fir):
            receiver = fir.params[0].name
            out[receiver] = env.get(receiver, out[receiver])
        return out

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
                env[name] = frozenset({GroupValue(self.rules.group_names[name])})
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
            values = frozenset({ConstValue(None)})
        return tuple(sorted({describe(v) for v in values}))


def _answers(symbol: dict[str, Any], args: list, kwargs: dict) -> bool:
    """Whether the symbol's answer holds for this call: where it names an argument (`param`,
    at `position`, `default` when not passed), that argument is surely true; else the body is
    walked (`is_pipeline_first_stage(ignore_virtual=False)` asks the virtual stage)."""
    if "param" not in symbol:
        return True
    if symbol["param"] in kwargs:
        values = kwargs[symbol["param"]]
    elif len(args) > symbol["position"]:
        values = args[symbol["position"]]
    else:
        return bool(symbol["default"])
    return bool(values) and all(concrete(v) == (True, True) for v in values)
