"""Closed prefixes: each rank's first ops, cut so that a replay of the cut says what a replay of
the whole run would (the join replays a bounded number of ops of a long run)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from auditor.analysis.waitfor.model import Conditions, Key, Op, coalesced_for, communicator_for


def closed_prefixes(programs: Mapping[int, Sequence[Op]], conditions: Conditions,
                    per_rank: int, totals: Mapping[int, int] | None = None
                    ) -> dict[int, list[Op]]:
    """Each rank's first ops (at most `per_rank`), cut further until the cut is closed: every op
    in it has its matching ops in it, and every communicator created in it has all its members
    using it in it. A hang replayed on such prefixes is a hang of the whole run (later ops
    cannot unblock earlier ones); on prefixes cut blindly, an op whose partner lies beyond its
    peer's cut would look blocked. `totals`: each rank's op count when `programs` hold only a
    head of the run; a rank whose prefix is all of its ops is not cut, and what it lacks is
    really missing."""
    totals = totals or {r: len(p) for r, p in programs.items()}
    n = {r: min(len(p), per_rank) for r, p in programs.items()}
    lazy = conditions.init == "lazy" and conditions.model.lazy_communicators
    # Per op, once: its lane, its partners' (rank, lane) and its communicator, as small ints.
    ids: dict[Any, int] = {}
    lane_of: dict[Key, int] = {}
    partners_of: dict[Key, list[tuple[int, int]]] = {}
    comm_of: dict[Key, int] = {}
    members: dict[int, tuple[int, ...]] = {}
    for rank, program in programs.items():
        for op in program[:n[rank]]:
            comm = communicator_for(op, conditions, coalesced_for(op, conditions))
            key = (rank, op.index)
            cid = comm_of[key] = ids.setdefault(comm, len(ids))
            members[cid] = comm.members
            lane_of[key] = ids.setdefault(_lane(op, cid), len(ids))
            if op.kind == "collective":
                partners_of[key] = [(m, ids.setdefault(("coll", cid, m), len(ids)))
                                    for m in comm.members if m != rank]
            else:
                assert op.peer is not None, "a point-to-point op has a peer"
                partners_of[key] = [(op.peer, ids.setdefault(_lane(op, cid, partner=True),
                                                             len(ids)))]
    while True:
        cut = {r for r in n if n[r] < totals.get(r, n[r])}
        if not cut:
            break
        lanes: Counter = Counter()
        used: dict[int, set[int]] = {}
        for rank, program in programs.items():
            for op in program[:n[rank]]:
                key = (rank, op.index)
                lanes[lane_of[key]] += 1
                used.setdefault(comm_of[key], set()).add(rank)
        shrunk = False
        for rank, program in programs.items():
            seen: Counter = Counter()
            mine: set[int] = set()
            for op in program[:n[rank]]:
                key = (rank, op.index)
                k = seen[lane_of[key]]
                seen[lane_of[key]] += 1
                short = any(lanes[lane] <= k and m in cut for m, lane in partners_of[key])
                cid = comm_of[key]
                if not short and lazy and cid not in mine:  # created here: all must come
                    short = any(m in cut and m not in used[cid] for m in members[cid])
                mine.add(cid)
                if short:
                    n[rank] = op.index
                    shrunk = True
                    break
        if not shrunk:
            break
    return {r: list(p[:n[r]]) for r, p in programs.items()}


def _lane(op: Op, comm: int, partner: bool = False) -> tuple:
    """Where `op` is matched in order: (comm, source, destination, send|recv) for P2P, (comm,
    rank) for collectives; `partner`: the lane its matching op is on."""
    if op.kind == "collective":
        return ("coll", comm, op.rank)
    send = (op.kind == "send") != partner
    src, dst = (op.rank, op.peer) if op.kind == "send" else (op.peer, op.rank)
    return ("p2p", comm, src, dst, "send" if send else "recv")
