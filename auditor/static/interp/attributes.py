"""Attributes and the MRO: a module's top level run on first use (its globals are its
attributes), star imports, `from m import x` resolved lazily, attribute lookup on modules,
objects, classes and `super()`, methods bound to their object, and class hierarchies."""

from __future__ import annotations

from typing import Any

from auditor.static.exports import star_binds
from auditor.static.interp.shared import (
    MAX_IMPORT_DEPTH, PYTHON_DEPTH, InterpreterCore, Lazy,
)
from auditor.static.interp.state import Frame, State
from auditor.static.interp.values import (
    MANY, Api, ConfigObject, Data, External, Func, GroupValue, Guarded, Klass, Module, Obj, _Super, bare, cap,
    ordered,
)
from auditor.static.ir import ir


class Attributes(InterpreterCore):
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

    def function_ir(self, func: Func) -> ir.FunctionIR | None:
        mod = self.program.module(func.module)
        return mod.functions.get(func.qualname) if mod else None

    def class_ir(self, k: Klass) -> ir.ClassIR | None:
        mod = self.program.module(k.module)
        return mod.classes.get(k.qualname) if mod else None

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
                return frozenset({GroupValue("world")})
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
                return frozenset({GroupValue(self.rules.group_names[attr])})
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
            return frozenset({GroupValue(self.rules.group_names[attr])})
        return frozenset({Data(f".{attr}")})

    def _named_group(self, name: str, values: frozenset) -> frozenset:
        """An unknown value held under a name like `pp_group` is taken for that group."""
        dim = self.rules.group_names.get(name)
        if dim is not None and values and all(isinstance(bare(v), Data) for v in values):
            return frozenset({GroupValue(dim)})
        return values

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
