"""The wait-for graph the replay leaves behind: its nodes, its edges as the report shows them,
and the cycle that is the hang."""

from __future__ import annotations

from typing import Any

Node = tuple  # ("cpu", rank) | ("op", rank, index)


def edge_json(target: Node | None, reason: str) -> dict[str, Any]:
    """A wait-for edge for the report: the rank and op waited on (index None: the rank's CPU)."""
    return {"rank": target[1] if target else None,
            "index": target[2] if target and target[0] == "op" else None, "reason": reason}


def find_cycle(edges: dict[Node, list[tuple[Node | None, str]]]) -> list[Node]:
    """The first cycle found walking from each blocked node in order (iterative DFS)."""
    state: dict[Node, int] = {}  # 1 on the current path, 2 finished
    for start in sorted(edges, key=lambda n: (n[1], n[0] != "cpu", n[2:] if len(n) > 2 else ())):
        if state.get(start):
            continue
        path: list[Node] = [start]
        todo: list[list[Node]] = [[t for t, _ in edges[start] if t is not None]]
        state[start] = 1
        while path:
            if not todo[-1]:
                state[path.pop()] = 2
                todo.pop()
                continue
            nxt = todo[-1].pop(0)
            if state.get(nxt) == 1:
                return path[path.index(nxt):]
            if state.get(nxt) == 2 or nxt not in edges:
                continue
            state[nxt] = 1
            path.append(nxt)
            todo.append([t for t, _ in edges[nxt] if t is not None])
    return []
