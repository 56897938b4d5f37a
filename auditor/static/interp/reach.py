"""Reachability of each site from the entry points, with the guards and call paths that explain it.

A node is reached under a formula over configuration atoms: along a path the guards combine
with AND, across paths with OR, simplified as they go (`c or not c` is true), so a site reached
under `c` on one path and under `not c` on another is reached. A site no path reaches is "no" when a branch that is false under the config blocks
its function (that guard is shown), or when the function's own guards rule it out whoever calls
it; otherwise "unknown": it may still be reached through a call the analysis could not resolve
(a model's forward, a callback). When a budget left a reachable function unwalked, "no" proves
nothing: such a site is "unknown", and the reason names the cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from auditor.static.interp.callgraph import Interpreter
from auditor.static.interp.graph import Blocked, Cut, Edge, Guard
from auditor.static.interp.formula import FALSE, NO, TRUE, UNK, YES, atoms_of, conj, disj, level

_RANK = {NO: 0, UNK: 1, YES: 2}
MAX_PATHS = 3


@dataclass
class SiteReach:
    reachable: str
    guards: list[str] = field(default_factory=list)  # tests that read the configuration
    conditions: list[str] = field(default_factory=list)  # tests on run-time data on the way
    paths: list[list[str]] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    reason: str = ""
    decided_by: list[str] = field(default_factory=list)  # the unknown config tests it rests on


class Reachability:
    """The formula under which each node is reached from a set of start nodes (the OR over its
    paths), and one parent edge each for the call path shown: the first edge that raised the
    node's three-valued reading."""

    def __init__(self, interp: Interpreter, starts: list[int]) -> None:
        self.interp = interp
        self.reached: dict[int, int] = dict.fromkeys(starts, TRUE)
        self.parent: dict[int, Edge | None] = dict.fromkeys(starts)
        out = interp.calls_from()
        work = list(starts)
        while work:  # a fixpoint: formulas only grow, over finitely many atoms
            u = work.pop()
            for e in out.get(u, []):
                cand = conj(self.reached[u], e.status)
                old = self.reached.get(e.callee, FALSE)
                new = disj(old, cand)
                if new == old:
                    continue
                if _RANK[level(new)] > _RANK[level(old)]:
                    self.parent[e.callee] = e
                self.reached[e.callee] = new
                work.append(e.callee)

    def formula(self, node: int) -> int:
        return self.reached.get(node, FALSE)

    def status(self, node: int) -> str:
        return level(self.formula(node))

    def chain(self, node: int) -> tuple[list[str], list[Guard]]:
        """Short function names from a start node to `node` (module-level code left out), and
        the guards of the edges on the way."""
        names: list[str] = []
        guards: list[Guard] = []
        seen: set[int] = set()
        cur: int | None = node
        while cur is not None and cur not in seen:
            seen.add(cur)
            n = self.interp.nodes[cur]
            if n.qualname != "<module>":
                names.append(n.short)
            edge = self.parent.get(cur)
            if edge is None:
                break
            guards[:0] = list(edge.guards)
            cur = edge.caller
        return list(reversed(names)), guards


@dataclass
class BlockedCallee:
    """A function a false guard keeps from being called, walked on its own (a probe): what it
    reaches is reached only through it."""

    function: str
    blocked: Blocked
    reach: Reachability


def site_reach(
    interp: Interpreter,
    reach: Reachability,
    site_ids_by_function: dict[str, list[str]],
    probes: dict[str, int | None],
    blocked_callees: Sequence[BlockedCallee] = (),
) -> dict[str, SiteReach]:
    """Reachability of every site; `probes` maps a function to its stand-alone probe node."""
    hits_by_site: dict[str, list] = {}
    for h in interp.hits:
        hits_by_site.setdefault(h.site, []).append(h)
    cuts = reachable_cuts(interp, reach)
    out: dict[str, SiteReach] = {}
    for function, site_ids in site_ids_by_function.items():
        for sid in site_ids:
            r, probe_cuts = _one(interp, reach, sid, function, hits_by_site.get(sid, []), probes,
                                 blocked_callees)
            out[sid] = _not_ruled_out(r, cuts or probe_cuts)
    return out


def reachable_cuts(interp: Interpreter, reach: Reachability) -> list[Cut]:
    """The budget cuts on some path from `reach`'s start nodes."""
    return [c for c in interp.cuts if reach.status(c.node) != NO]


def _not_ruled_out(r: SiteReach, cuts: list[Cut]) -> SiteReach:
    """A site not reached while a budget left reachable code unwalked is unknown, and says so."""
    if r.reachable == YES or not cuts:
        return r
    first = cuts[0]
    more = f" and {len(cuts) - 1} more" if len(cuts) > 1 else ""
    cut = (f"the {first.budget} budget ({first.limit}) stopped the call graph at "
           f"{first.function}{more}, which may reach it")
    if r.reachable == UNK:
        return SiteReach(UNK, r.guards, r.conditions, r.paths, r.groups,
                         f"{r.reason}; {cut}" if r.reason else cut)
    why = f"; without the cut: {r.reason}" if r.reason else ""
    return SiteReach(UNK, r.guards, r.conditions, r.paths, r.groups,
                     reason=f"not analysed: {cut}{why}")


def _one(interp, reach, sid, function, hits, probes, blocked_callees) -> tuple[SiteReach, list[Cut]]:
    """The site's reachability, and the cuts met by its function's probe, if it needed one."""
    reached = FALSE
    best = NO
    best_hit = None
    groups: set[str] = set()
    paths: list[list[str]] = []
    for h in hits:
        f = conj(reach.formula(h.node), h.status)
        if f == FALSE:
            continue
        reached = disj(reached, f)
        status = level(f)
        groups.update(h.groups)
        if _RANK[status] > _RANK[best] or best_hit is None:
            best, best_hit = status, h
        names, _ = reach.chain(h.node)
        path = _dedupe(names)
        if path and path not in paths and len(paths) < MAX_PATHS:
            paths.append(path)
    if best_hit is not None:
        _, edge_guards = reach.chain(best_hit.node)
        return SiteReach(level(reached), *_split([*edge_guards, *best_hit.guards]), paths,
                         sorted(groups), decided_by=atoms_of(reached)), []
    for b in interp.blocked:
        if (sid in b.sites or function in b.functions) and reach.status(b.node) != NO:
            names, edge_guards = reach.chain(b.node)
            path = _dedupe(names)
            return SiteReach(
                NO, *_split([*edge_guards, *b.guards]), [path] if path else [],
                reason=f"blocked in {interp.nodes[b.node].short} by `{b.guards[-1].text}`",
            ), []
    for bc in blocked_callees:
        inner = [b for b in interp.blocked if sid in b.sites or function in b.functions]
        if any(bc.reach.status(x.node) != NO for x in [*hits, *inner]):
            names, edge_guards = reach.chain(bc.blocked.node)
            return SiteReach(
                NO, *_split([*edge_guards, *bc.blocked.guards]), [_dedupe(names)] if names else [],
                reason=f"reached only through {bc.function.rsplit('.', 1)[-1]}, which "
                       f"{interp.nodes[bc.blocked.node].short} never calls: "
                       f"`{bc.blocked.guards[-1].text}` is false",
            ), []
    probe = probes.get(function)
    if probe is not None:
        local = Reachability(interp, [probe])
        local_best = NO
        local_hit = None
        for h in hits:
            status = level(conj(local.formula(h.node), h.status))
            if _RANK[status] > _RANK[local_best]:
                local_best, local_hit = status, h
        if local_hit is None:
            dead = [b for b in interp.blocked if sid in b.sites and local.status(b.node) != NO]
            guards, conditions = _split(list(dead[0].guards)) if dead else ([], [])
            why = f" (`{dead[0].guards[-1].text}` is false)" if dead else ""
            ruled_out = SiteReach(NO, guards, conditions,
                                  reason=f"its own function's guards rule it out under this config{why}")
            return ruled_out, reachable_cuts(interp, local)
        return SiteReach(
            UNK, *_split(list(local_hit.guards)), [], sorted(set(local_hit.groups)),
            reason="no call path from the entry points was found (it may be reached through a call the analysis could not resolve)",
        ), []
    return SiteReach(UNK, reason="no call path from the entry points was found"), []


def _fmt(g: Guard) -> str:
    return g.text if g.value == YES else f"{g.text}  [{g.value}]"


def _split(guards: list[Guard]) -> tuple[list[str], list[str]]:
    """(configuration guards, run-time conditions), each in path order, without repeats."""
    config: list[str] = []
    data: list[str] = []
    for g in guards:
        into = config if g.config else data
        text = _fmt(g)
        if text not in into:
            into.append(text)
    return config, data


def _dedupe(names: list[str]) -> list[str]:
    out: list[str] = []
    for n in names:
        if not out or out[-1] != n:
            out.append(n)
    return out
