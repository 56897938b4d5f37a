"""The call graph's model: (function, calling context) nodes, the edges between them with the
guards on the way, the P2P sites each node hits, what branches that cannot be taken would have
called, the monkeypatches installed, and where a budget cut the walk. The interpreter
(`callgraph.py`) builds it; reachability (`reach.py`) reads it. Every status is a formula
(`formula.py`) over the configuration values the analysis leaves unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.static.interp.formula import level


@dataclass(frozen=True)
class Guard:
    text: str
    value: str  # can the guard be true here: yes / no / unknown
    config: bool = False  # the test reads a configuration value (else: run-time data only)

    @classmethod
    def of(cls, text: str, can_hold: int, config: bool) -> Guard:
        return cls(text, level(can_hold), config)


@dataclass(frozen=True)
class Cut:
    """A function (or module top level) the interpreter did not walk because a budget ran out:
    nothing it would have called is known."""

    function: str
    budget: str  # MAX_NODES | MAX_DEPTH | MAX_IMPORT_DEPTH | PYTHON_DEPTH
    limit: int
    node: int  # the node left unwalked; reachable from wherever it was called
    caller: int | None = None  # the node that called it (None: an import)

    def to_json(self, nodes: list[Node]) -> dict[str, Any]:
        return {"function": self.function, "budget": self.budget, "limit": self.limit,
                "called_from": nodes[self.caller].function if self.caller is not None else None}


@dataclass
class Edge:
    caller: int
    callee: int
    status: int  # formula: under which configurations the caller makes this call
    guards: tuple[Guard, ...]


@dataclass
class Hit:
    node: int
    site: str
    status: int  # formula: under which configurations the node reaches the site
    guards: tuple[Guard, ...]
    groups: tuple[str, ...] = ()


@dataclass
class Blocked:
    node: int
    guards: tuple[Guard, ...]  # the path to the branch, ending with the guard that is false
    functions: frozenset[str]
    sites: frozenset[str]


@dataclass
class AttrPatch:
    target: str  # "module.attr" or "module.Class.attr"
    replacement: str  # module.qualname of the function or class put there
    short: str  # module tail and qualname, as call paths show it
    node: int
    status: str  # yes / no / unknown: does the installing code run


@dataclass
class Node:
    id: int
    module: str
    qualname: str
    context: str

    @property
    def function(self) -> str:
        return f"{self.module}.{self.qualname}"

    @property
    def short(self) -> str:
        """Module tail and qualname, as paths are shown: `schedules.forward_backward_...`."""
        return f"{self.module.rsplit('.', 1)[-1]}.{self.qualname}"
