"""The interpreter's shared interface, as mypy's `checker_shared.py` is its checker's: the state
every part of the walk reads and writes (the graph being built, the memo, the budgets), the
bookkeeping of nodes and cuts, and the methods each mixin calls on the others, declared here and
defined once in `statements`, `expressions`, `attributes` or `calls`. `callgraph.Interpreter`
composes the four.
"""

from __future__ import annotations

import sys
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from auditor.rulebook.interpreter import Rules
from auditor.static.analyze import collector_paused
from auditor.static.interp.graph import Blocked, Cut, Edge, Hit, Node, AttrPatch
from auditor.static.interp.program import Program
from auditor.static.interp.state import Frame, State
from auditor.static.interp.values import Cfg, ConstValue, Data, DictV, Elements, Func, Klass, Obj
from auditor.static.ir import ir

# In entry code, `P2PAUDIT_INSTANCE(Cls)` is an instance of Cls whose __init__ never ran, and
# `P2PAUDIT_CALL(f)` calls f with every parameter unknown (defaults too: a caller may pass them).
INSTANCE = "P2PAUDIT_INSTANCE"
CALL_UNKNOWN = "P2PAUDIT_CALL"
# An empty `*args` (no positional argument left for it): `f(*args)` passes nothing on, so that
# `super().__init__(*args, **kwargs)` binds its callee's parameters from the keywords.
NO_ARGS = frozenset({ConstValue(())})
ENTRY_PREFIX = "<entry"  # entry code runs as a module named `<entry N>`
MAX_LOOP_PASSES = 3  # walks of one loop body, while each installs new patches the next would see
MAX_DEPTH = 40  # nested calls being interpreted
MAX_RECURSION = 2  # activations of one function with their own arguments; deeper ones are widened
MAX_IMPORT_DEPTH = 60  # nested module top levels being executed (an import chain)
MAX_NODES = 6000  # function contexts interpreted
# The interpreter recurses in Python once per call, import and nested statement; it runs on a
# thread of its own whose stack and recursion limit hold the budgets above with room to spare.
# Deeper still (pathological nesting) is a budget cut, never a crash.
PYTHON_DEPTH = 20_000
STACK_BYTES = 512 * 1024 * 1024


class ReachedStop(Exception):
    """The walk called a function of `InterpreterCore.stop_at`: `name`."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@dataclass(frozen=True)
class Lazy:
    """A name bound by `from module import attr`, resolved on first use."""

    module: str
    attr: str


class InterpreterCore(ABC):
    """The walk's state and the methods the parts call on each other (`Interpreter` is the one
    concrete class; `typetests` reads its class hierarchy through `mro`, `closed`, `defines`)."""

    def __init__(self, program: Program, config: dict[str, Any], rules: Rules) -> None:
        self.program = program
        self.config = config  # key -> value; missing key = unknown
        self.rules = rules
        self.globals: dict[str, dict[str, frozenset]] = {}
        # closure number -> (the environment, its own closure); numbered in the order the walk
        # defines them (never by address: the order of values by closure is the same every run)
        self.closures: dict[int, tuple[dict[str, frozenset], int]] = {}
        self.closure_numbers: dict[int, int] = {}  # id of an environment in `closures` -> its number
        self.class_attrs: dict[Klass, dict[str, frozenset]] = {}  # patched class attributes
        self.nodes: list[Node] = []
        self.node_index: dict[tuple, int] = {}
        self.memo: dict[tuple, frozenset] = {}
        self.alloc_args: dict[tuple, set[tuple]] = {}  # the arguments each allocation site ran __init__ with
        self.active: set[tuple] = set()
        self.walking: dict[tuple, int] = {}  # (module, qualname, closure) -> its activations being walked
        self.edges: list[Edge] = []
        self._by_caller: dict[int, list[Edge]] = {}
        self._indexed = 0  # edges[:_indexed] are in _by_caller
        self.hits: list[Hit] = []
        self.blocked: list[Blocked] = []
        self.patches: list[AttrPatch] = []
        self._patch_keys: set[tuple[str, str, str, str]] = set()
        self.unresolved: dict[str, int] = {}
        # The names outside the analysed sources the walk called (`torch.load`) and imported,
        # for what the walk reaches beyond P2P sites (analysis.schedule_reach); the first call
        # of a function of `stop_at` (module.qualname) ends the walk (ReachedStop).
        self.outside: set[str] = set()
        self.imported: set[str] = set()
        self.stop_at: frozenset[str] = frozenset()
        # Under `stop_at`: calls that run code the walk cannot name (a class of the read code
        # handed to code not read, a `getattr` of a computed name), as (module, call text).
        self.unseen: set[tuple[str, str]] = set()
        self.read_only: object = None  # the expression whose value only is read (Calls.eval_read)
        self.read_now = False  # the call being made is `read_only`
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
        function = f"{module}.{python_qualname(qualname)}"
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

    def node(self, module: str, qualname: str, context: Any, label: str | None = None) -> int:
        """The node of `qualname` in `context`, which is its whole key (a hash of it would merge
        two contexts whose hashes meet); `label` shows it, where its text would be long."""
        key = (module, qualname, context)
        if key not in self.node_index:
            self.node_index[key] = len(self.nodes)
            self.nodes.append(Node(len(self.nodes), module, qualname, str(context)[:80] if label is None else label))
        return self.node_index[key]

    def config_value(self, key: str) -> Cfg:
        self.config_reads += 1
        if key in self.config:
            return Cfg(key, True, self.config[key])
        return Cfg(key, False)

    # --- in statements.py -------------------------------------------------------------------------

    @abstractmethod
    def exec_block(self, stmts: list[ir.Stmt], state: State, frame: Frame) -> State: ...

    @abstractmethod
    def exec_namespace(self, stmts: list[ir.Stmt], env: dict[str, frozenset], frame: Frame) -> None: ...

    @abstractmethod
    def assign(self, target: ir.Expr, value: frozenset, state: State, frame: Frame) -> None: ...

    @abstractmethod
    def _closure(self, state: State, frame: Frame) -> int: ...

    # --- in expressions.py ------------------------------------------------------------------------

    @abstractmethod
    def eval(self, e: ir.Expr | None, state: State, frame: Frame) -> frozenset: ...

    @abstractmethod
    def lookup_quiet(self, name: str, state: State, frame: Frame) -> frozenset: ...

    # --- in attributes.py -------------------------------------------------------------------------

    @abstractmethod
    def module_globals(self, name: str) -> dict[str, frozenset] | None: ...

    @abstractmethod
    def _assign_global(self, module: str, name: str, value: frozenset) -> None: ...

    @abstractmethod
    def star_lookup(self, module: str, name: str) -> frozenset | None: ...

    @abstractmethod
    def _force(self, values: frozenset) -> frozenset: ...

    @abstractmethod
    def function_ir(self, func: Func) -> ir.FunctionIR | None: ...

    @abstractmethod
    def eval_attr(self, e: ir.Attr, state: State, frame: Frame) -> frozenset: ...

    @abstractmethod
    def attr_of(self, b: Any, attr: str, base_text: str | None) -> frozenset: ...

    @abstractmethod
    def _named_group(self, name: str, values: frozenset) -> frozenset: ...

    @abstractmethod
    def class_lookup(self, k: Klass, attr: str) -> tuple[Klass, frozenset] | None: ...

    @abstractmethod
    def mro(self, k: Klass) -> list[Klass]: ...

    @abstractmethod
    def closed(self, k: Klass) -> bool: ...

    @abstractmethod
    def defines(self, k: Klass, attr: str) -> bool: ...

    # --- in calls.py ------------------------------------------------------------------------------

    @abstractmethod
    def eval_call(self, e: ir.Call, state: State, frame: Frame) -> frozenset: ...

    @abstractmethod
    def eval_read(self, e: ir.Expr, state: State, frame: Frame) -> frozenset: ...

    @abstractmethod
    def _call(self, e: ir.Call, state: State, frame: Frame) -> tuple[frozenset, list, dict, frozenset]: ...

    @abstractmethod
    def call_function(self, func: Func, args: list, kwargs: dict, caller: tuple[State, Frame] | None) -> frozenset: ...

    @abstractmethod
    def _hit_groups(self, site_id: str, args: list, kwargs: dict, receivers: frozenset) -> tuple[str, ...]: ...


def identity(v: Any) -> tuple[int, Any]:
    """`v` by identity in a memo key: its address orders keys the same way within a run, and
    the object itself, held by the key, keeps that address from passing to a later object
    (a probe's instance is dropped when the probe ends; CPython may give the next one its
    address, and an address alone would take the new object for the old)."""
    return (id(v), v)


def value_key(values: frozenset) -> tuple:
    """A memo key for what a variable holds: a dict by its entries (two calls with equal
    `**kwargs` share a context), an object by identity. A dict met again inside itself (a child
    holding its parent) is keyed there by its serial (which no other dict has, even once it is
    freed): its entries are being keyed already."""
    return _value_key(values, set())


def _value_key(values: frozenset, open_: set[int]) -> tuple:
    out: list[Any] = []
    for v in values:
        if isinstance(v, DictV) and id(v) in open_:
            out.append(("dict at", v.serial))
        elif isinstance(v, DictV):
            open_.add(id(v))
            out.append(("dict", tuple(sorted((k, _value_key(x, open_)) for k, x in v.items.items())),
                        tuple(sorted((repr(k), _value_key(x, open_)) for k, x in v.keyed.items())),
                        _value_key(v.anykey, open_)))
            open_.discard(id(v))
        elif isinstance(v, Elements):
            out.append(("elements", _value_key(v.values, open_)))
        elif isinstance(v, Obj):
            out.append(("obj", identity(v)))
        elif isinstance(v, Data):
            out.append(("data",))
        else:
            out.append(v)
    return tuple(sorted(out, key=repr))


def python_qualname(key: str) -> str:
    """The IR stores a second definition of a name as `name#2`; Python calls both `name`."""
    return key.split("#", 1)[0]


def on_deep_stack(fn: Any, *args: Any) -> Any:
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
