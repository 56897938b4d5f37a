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

from auditor.static.interp.attributes import Attributes
from auditor.static.interp.calls import Calls
from auditor.static.interp.expressions import Expressions
from auditor.static.interp.shared import MAX_DEPTH, MAX_NODES, on_deep_stack
from auditor.static.interp.state import Frame
from auditor.static.interp.statements import Statements
from auditor.static.interp.values import Func, Klass, Obj
from auditor.static.ir import ir

__all__ = ["MAX_DEPTH", "MAX_NODES", "Interpreter"]  # the budgets, for the tests that reach them


class Interpreter(Statements, Expressions, Attributes, Calls):
    """The four parts of the walk (`statements`, `expressions`, `attributes`, `calls`) over the
    state `shared.InterpreterCore` holds; the entry points run on a deep stack of their own."""

    def run_module_ir(self, name: str, mod_ir: ir.ModuleIR) -> int:
        """Runs entry code (a snippet from the rules or --entry) as a module of its own."""
        return on_deep_stack(self._run_module_ir, name, mod_ir)

    def _run_module_ir(self, name: str, mod_ir: ir.ModuleIR) -> int:
        self.program.loaded[name] = mod_ir
        self.program.where.pop(name, None)
        env: dict[str, frozenset] = {}
        self.globals[name] = env
        node = self.node(name, "<module>", "entry")
        self.exec_namespace(mod_ir.body, env, Frame(node, name, 0, None, "module"))
        return node

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
        return on_deep_stack(self._invoke, func, [], {}, None, True)[1]
