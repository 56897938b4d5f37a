"""Where P2P descriptors and op references go inside one module, for `batched` and for telling
a passed op from a called one.

A `P2POp` issues nothing by itself: it is batched when it reaches `batch_isend_irecv` (or is made
in a coalescing block), through variables, lists and their appends, arguments and return values
of the module's own functions. An op passed as a value (`P2POp(dist.isend, ...)`, or
`_fill(ops, dist.isend)` whose parameter becomes one) is part of that descriptor, not a site.

A descriptor that leaves the module (returned from a function, kept in an attribute of `self`,
handed to another module's function) may be batched there, as torch's pipelining stages return
their ops to the schedule's `_batch_p2p`: it counts as batched, since a descriptor issues nothing
unless some batch takes it. Only one confined to the module and never batched is unbatched.

Values are followed flow-insensitively: every place a value is stored (a variable of a function,
an attribute of `self` in a class, a parameter, a return value) is a holder, and a store joins
the holders of both sides into one class (union-find). Over-joining can only mark a descriptor
batched that is not; a descriptor issues nothing unless some batch takes it.
"""

from __future__ import annotations

from collections.abc import Hashable

# Marks on holders (kept apart, so that marking never joins two classes):
SINK = "sink"  # what a batch issues
OP_SLOT = "op-slot"  # the op a descriptor describes
ESCAPE = "escape"  # out of the module's sight


class Flows:
    def __init__(self) -> None:
        self.parent: dict[Hashable, Hashable] = {}
        self.params: dict[str, list[str]] = {}  # function qualname -> parameter names
        self.calls: list[tuple[str, int | str, list[Hashable]]] = []  # callee, position|keyword, value
        self.marks: dict[str, list[Hashable]] = {SINK: [], OP_SLOT: [], ESCAPE: []}
        self.marked: dict[str, set[Hashable]] = {}
        self.holders: set[Hashable] = set()

    def find(self, x: Hashable) -> Hashable:
        root = x
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while x != root:  # path compression
            self.parent[x], x = root, self.parent.get(x, x)
        return root

    def join(self, holder: Hashable, values: list[Hashable]) -> None:
        self.holders.add(holder)
        self.holders.update(values)
        a = self.find(holder)
        for v in values:
            b = self.find(v)
            if a != b:
                self.parent[b] = a

    def mark(self, kind: str, values: list[Hashable]) -> None:
        self.marks[kind].extend(values)

    def argument(self, callee: str, slot: int | str, values: list[Hashable]) -> None:
        """A call of the module's own function: bound to its parameter once all defs are known."""
        if values:
            self.calls.append((callee, slot, values))

    def close(self) -> None:
        self.mark(ESCAPE, [h for h in self.holders if isinstance(h, tuple) and h[0] in ("ret", "attr")])
        for callee, slot, values in self.calls:
            params = self.params.get(callee)
            if params is None:
                continue
            name = params[slot] if isinstance(slot, int) and slot < len(params) else slot
            if isinstance(name, str) and name in params:
                self.join(("var", callee, name), values)
        self.marked = {kind: {self.find(h) for h in hs} for kind, hs in self.marks.items()}

    def reaches(self, holder: Hashable, kind: str) -> bool:
        return self.find(holder) in self.marked[kind]
