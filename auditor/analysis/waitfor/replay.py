"""The replay: every rank's ops issued and completed under the model of the package docstring
until nothing moves, then what is left explained, rank by rank and as a wait-for cycle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from auditor.analysis.waitfor.counts import count_mismatches
from auditor.analysis.waitfor.graph import Node, edge_json, find_cycle
from auditor.analysis.waitfor.model import (SAME_BUFFER_COLLECTIVES, Communicator, Conditions, Key, Op,
                                             coalesced_for, communicator_for)
from auditor.analysis.waitfor.result import Analysis, OpState, RankState
from auditor.analysis.waitfor.sizes import size_words
from auditor.analysis.waitfor.transports import ZERO_BUFFER

Stream = tuple  # (rank, communicator); gloo: (rank, communicator, the op's key)


def analyze(programs: Mapping[int, Sequence[Op]], conditions: Conditions) -> Analysis:
    """Replay every rank's ops under `conditions` until nothing moves; explain what is left."""
    return _Replay(programs, conditions).run()


class _Replay:
    def __init__(self, programs: Mapping[int, Sequence[Op]], conditions: Conditions) -> None:
        self.cond = conditions
        self.ops: dict[Key, Op] = {}
        self.entries: dict[int, list[tuple[Key, ...]]] = {}
        self.comm: dict[Key, Communicator] = {}
        self.coalesced: dict[Key, bool] = {}
        for rank in sorted(programs):
            self._load(rank, programs[rank])
        self._name_shared_descriptions()
        self.mismatched: list[dict[str, Any]] = []
        self.match = self._match()
        self.pc = dict.fromkeys(self.entries, 0)
        self.arrived: dict[Communicator, set[int]] = {}
        self.created: set[Communicator] = set()
        if conditions.init == "eager" or not conditions.model.lazy_communicators:
            self.created = set(self.comm.values())  # group communicators, made with the group
        self.streams_per_op = not conditions.model.stream_order  # gloo runs each op on its own
        self.streams: dict[Stream, list[tuple[Key, ...]]] = {}
        self.head: dict[Stream, int] = {}
        self.where: dict[Key, tuple[Stream, int]] = {}  # op -> (stream, place)
        self.done: set[Key] = set()

    def _name_shared_descriptions(self) -> None:
        """Megatron gives every PP group the same description: name those by their ranks too."""
        ranks_by_desc: dict[str, set[tuple[int, ...]]] = {}
        for op in self.ops.values():
            ranks_by_desc.setdefault(op.group.label, set()).add(op.group.ranks)
        for key, comm in self.comm.items():
            label = self.ops[key].group.label
            if len(ranks_by_desc[label]) > 1:
                shown = label + "[" + ",".join(map(str, comm.group)) + "]"
                self.comm[key] = replace(comm, name=shown + comm.name[len(label):])

    def _load(self, rank: int, program: Sequence[Op]) -> None:
        entries: list[tuple[Key, ...]] = []
        for position, op in enumerate(program):
            if op.rank != rank or op.index != position:
                raise ValueError(f"rank {rank}'s op {position} says rank {op.rank} index {op.index}")
            if rank not in op.group.ranks:
                raise ValueError(f"rank {rank}'s op {position} is on a group without it: {op.group}")
            if op.kind != "collective" and op.peer not in op.group.ranks:
                raise ValueError(f"rank {rank}'s op {position}: peer {op.peer} not in {op.group}")
            key = (rank, position)
            self.ops[key] = op
            coalesced = self.coalesced[key] = coalesced_for(op, self.cond)
            self.comm[key] = communicator_for(op, self.cond, coalesced)
            previous = self.ops.get((rank, position - 1))
            if coalesced and previous is not None and previous.batch == op.batch \
                    and self.coalesced[(rank, position - 1)]:
                entries[-1] = entries[-1] + (key,)
            else:
                entries.append((key,))
        self.entries[rank] = entries

    def _match(self) -> dict[Key, tuple[Key, ...] | None]:
        """Each op's partners: the matching send/receive, or the same collective on every member."""
        lanes: dict[tuple, list[Key]] = {}
        for key, op in self.ops.items():
            comm = self.comm[key]
            if op.kind == "send":
                lanes.setdefault(("p2p", comm, op.rank, op.peer, "send"), []).append(key)
            elif op.kind == "recv":
                lanes.setdefault(("p2p", comm, op.peer, op.rank, "recv"), []).append(key)
            else:
                lanes.setdefault(("coll", comm, op.rank), []).append(key)
        match: dict[Key, tuple[Key, ...] | None] = dict.fromkeys(self.ops)
        self.lanes = lanes
        for lane, keys in lanes.items():
            if lane[0] == "p2p" and lane[4] == "send":
                recvs = lanes.get(lane[:4] + ("recv",), [])
                for send, recv in zip(sorted(keys), sorted(recvs)):
                    match[send], match[recv] = (recv,), (send,)
                    self._check_pair(send, recv)
            elif lane[0] == "coll":
                members = self.comm[keys[0]].members
                partners = [sorted(lanes.get(("coll", lane[1], m), [])) for m in members]
                for k, key in enumerate(sorted(keys)):
                    if all(len(p) > k for p in partners):
                        match[key] = tuple(p[k] for p in partners if p[k] != key)
                        if key == partners[0][k]:  # each instance once, from its first member
                            self._check_collective([p[k] for p in partners])
        return match

    def _check_pair(self, send: Key, recv: Key) -> None:
        """A pair disagrees in size, dtype, or role: a send meant for the next stage must be
        received as from the previous one (`Op.role`), or the tensors silently swap."""
        a, b = self.ops[send], self.ops[recv]
        sizes = a.nbytes != b.nbytes and a.nbytes > 0 and b.nbytes > 0 and a.sized and b.sized
        dtypes = a.dtype != b.dtype and a.dtype and b.dtype
        roles = a.role and b.role and a.role == b.role
        if sizes or dtypes or roles:
            self.mismatched.append({
                "communicator": self.comm[send].name,
                "what": " and ".join(w for w, bad in (("size", sizes), ("dtype", dtypes),
                                                      ("role", roles)) if bad),
                "send": _pair_side(a), "recv": _pair_side(b)})

    def _check_collective(self, keys: list[Key]) -> None:
        """One instance of a collective on one tensor (`SAME_BUFFER_COLLECTIVES`): a member whose
        size or dtype differs from the first member's gets other bytes than were sent, silently,
        or the op never completes (a broadcast of fp16 losses into float32 buffers)."""
        first = self.ops[keys[0]]
        if first.api not in SAME_BUFFER_COLLECTIVES:
            return
        for key in keys[1:]:
            other = self.ops[key]
            if other.api != first.api:
                continue
            sizes = first.nbytes != other.nbytes and first.nbytes > 0 and other.nbytes > 0
            dtypes = first.dtype != other.dtype and first.dtype and other.dtype
            if sizes or dtypes:
                self.mismatched.append({
                    "communicator": self.comm[keys[0]].name, "collective": first.api,
                    "what": " and ".join(w for w, bad in (("size", sizes), ("dtype", dtypes)) if bad),
                    "send": _pair_side(first), "recv": _pair_side(other)})

    # --- replay --------------------------------------------------------------------------------
    def run(self) -> Analysis:
        """Work-list driven: a rank is retried when one of its ops completes or a member joins a
        communicator it waits to create; a stream when an entry is queued on it or a partner of
        its head's ops starts or completes. Each event wakes only what it can move, so the work
        grows with the ops, not with ops x streams (a pass over every stream per issued op was
        quadratic: 16M stream visits for 4,000 recorded send/recv pairs)."""
        self.waiters: dict[Key, list[Key]] = {}  # op -> the ops whose completion looks at it
        for key, partners in self.match.items():
            for partner in partners or ():
                self.waiters.setdefault(partner, []).append(key)
        self.ranks_todo: set[int] = set(self.entries)
        self.streams_todo: set[Stream] = set()
        while self.ranks_todo or self.streams_todo:
            for rank in sorted(self.ranks_todo):
                self.ranks_todo.discard(rank)
                self._issue(rank)
            while self.streams_todo:
                self._progress(self.streams_todo.pop())
        return self._explain()

    def _wake_partners(self, keys: tuple[Key, ...]) -> None:
        """`keys` started or completed: the streams of the ops whose completion depends on them."""
        for key in keys:
            for waiter in self.waiters.get(key, ()):
                place = self.where.get(waiter)
                if place is not None and waiter not in self.done:
                    self.streams_todo.add(place[0])

    def _issue(self, rank: int) -> None:
        entries = self.entries[rank]
        while self.pc[rank] < len(entries):
            entry = entries[self.pc[rank]]
            if any((rank, i) not in self.done for key in entry for i in self.ops[key].after):
                return
            comm = self.comm[entry[0]]
            if comm not in self.created:
                arrived = self.arrived.setdefault(comm, set())
                if rank not in arrived:
                    arrived.add(rank)
                    self.ranks_todo.update(m for m in arrived if m != rank)
                if not set(comm.members) <= arrived:
                    return
                self.created.add(comm)
            stream = (rank, comm, entry[0]) if self.streams_per_op else (rank, comm)
            queue = self.streams.setdefault(stream, [])
            self.head.setdefault(stream, 0)
            for key in entry:
                self.where[key] = (stream, len(queue))
            if self.head[stream] == len(queue):
                self._wake_partners(entry)  # active as it is queued
            queue.append(entry)
            self.streams_todo.add(stream)
            self.pc[rank] += 1

    def _active(self, key: Key) -> bool:
        place = self.where.get(key)
        return place is not None and self.head[place[0]] == place[1]

    def _completes(self, key: Key) -> bool:
        op, partners = self.ops[key], self.match[key]
        if op.kind == "send" and op.nbytes <= self.cond.buffer_bytes:
            return True
        # A large send needs its receive running; a receive, its send started; a collective, all.
        return partners is not None and all(p in self.done or self._active(p) for p in partners)

    def _progress(self, stream: Stream) -> None:
        queue = self.streams[stream]
        rank = stream[0]
        while self.head[stream] < len(queue):
            entry = queue[self.head[stream]]
            ready = [key for key in entry if key not in self.done and self._completes(key)]
            if len(entry) > 1 and len(ready) < sum(key not in self.done for key in entry):
                return  # a coalesced batch is one NCCL group: its ops complete together (AND)
            if ready:
                self.done.update(ready)
                self._wake_partners(tuple(ready))
                self.ranks_todo.add(rank)
            if not all(key in self.done for key in entry):
                return
            self.head[stream] += 1
            if self.head[stream] < len(queue):
                self._wake_partners(queue[self.head[stream]])  # the next entry starts

    # --- explanation ---------------------------------------------------------------------------
    def _explain(self) -> Analysis:
        edges: dict[Node, list[tuple[Node | None, str]]] = {}
        for rank in self.entries:
            if self._stuck(rank):
                edges[("cpu", rank)] = self._cpu_edges(rank)
        for key in self.ops:
            if key in self.where and key not in self.done:
                edges[("op",) + key] = [self._op_edge(key)]
        hang = bool(edges)
        cycle = find_cycle(edges) if hang else []
        ops_first = [i for i, node in enumerate(cycle) if node[0] == "op"]
        if ops_first:  # read from an op: "rank 0's SEND ... waits for ..."
            cycle = cycle[ops_first[0]:] + cycle[:ops_first[0]]
        ranks = {rank: self._rank_state(rank, edges) for rank in self.entries}
        blocked = [f"rank {r}: {s.words}" for r, s in ranks.items() if s.cpu != "finished"]
        stuck = any(self._stuck(r) for r in self.entries)
        counts = count_mismatches(self.ops, self.comm, self.entries, self.done) if stuck else []
        return Analysis(hang, self.cond, ranks, self._cycle_words(cycle, edges), blocked,
                        self.mismatched, counts)

    def _stuck(self, rank: int) -> bool:
        """Not done: still issuing, or issued everything and some op never completed (a program
        that ends there waits for it, as does a trace cut where its rank blocked)."""
        if self.pc[rank] < len(self.entries[rank]):
            return True
        return any(k not in self.done for entry in self.entries[rank] for k in entry)

    def _creating(self, rank: int) -> Communicator | None:
        entries = self.entries[rank]
        if self.pc[rank] >= len(entries):
            return None
        entry = entries[self.pc[rank]]
        if any((rank, i) not in self.done for key in entry for i in self.ops[key].after):
            return None
        return self.comm[entry[0]]

    def _cpu_edges(self, rank: int) -> list[tuple[Node | None, str]]:
        if self.pc[rank] == len(self.entries[rank]):
            pending = min(k for entry in self.entries[rank] for k in entry if k not in self.done)
            return [(("op",) + pending, "waits for")]
        entry = self.entries[rank][self.pc[rank]]
        waiting = sorted({i for key in entry for i in self.ops[key].after
                          if (rank, i) not in self.done})
        if waiting:
            return [(("op", rank, waiting[0]), "waits for")]
        comm = self._creating(rank)
        assert comm is not None
        out: list[tuple[Node | None, str]] = []
        for member in comm.members:
            if member in self.arrived.get(comm, set()):
                continue
            if member in self.entries and self.pc[member] < len(self.entries[member]):
                out.append((("cpu", member), "join"))
            else:
                out.append((None, f"rank {member} never uses communicator {comm.name}"))
        return out

    def _op_edge(self, key: Key) -> tuple[Node | None, str]:
        stream, position = self.where[key]
        if self.head[stream] != position:
            head = self.streams[stream][self.head[stream]]
            first = next(k for k in head if k not in self.done)
            return ("op",) + first, "queued"
        op, partners = self.ops[key], self.match[key]
        if partners is None:
            if op.peer in self.entries and self._stuck(op.peer):
                return ("cpu", op.peer), "not issued"
            wanted = {"send": "RECV", "recv": "SEND"}.get(op.kind, op.api.upper())
            return None, f"no matching {wanted} was ever issued on communicator {self.comm[key].name}"
        for partner in partners:
            if partner in self.done or self._active(partner):
                continue
            if partner not in self.where:
                return ("cpu", partner[0]), "not issued"
            return ("op",) + partner, "match"
        entry = self.streams[stream][position]
        sibling = next((k for k in entry if k not in self.done and not self._completes(k)), None)
        if sibling is None:
            raise AssertionError(f"{key} is active with all partners running but did not complete")
        return ("op",) + sibling, "group"

    def _rank_state(self, rank: int, edges: dict[Node, list]) -> RankState:
        ops = []
        for entry in self.entries[rank]:
            for key in entry:
                node = ("op",) + key
                if key in self.done:
                    state = "done"
                elif key not in self.where:
                    state = "not_issued"
                else:
                    state = "blocked" if self._active(key) else "queued"
                blocked_on = edge_json(*edges[node][0]) if node in edges else None
                comm = self.comm[key]
                ops.append(OpState(self.ops[key], comm.name, self.coalesced[key], state,
                                   blocked_on, tuple(comm.members)))
        words = []
        blocked = [o for o in ops if o.state == "blocked"]
        if blocked:
            words.append("blocked in " + "; ".join(self._desc((rank, o.op.index)) for o in blocked))
            queued = [o for o in ops if o.state == "queued"]
            if queued:
                words.append("queued behind: " + ", ".join(
                    f"{o.op.words()} on {o.communicator}" for o in queued))
        creating = self._creating(rank)
        if creating is not None:
            words.append(self._creation_words(rank, creating))
            cpu = "creating"
        elif ("cpu", rank) in edges:
            cpu = "waiting"
        else:
            cpu = "finished"
        waits = [edge_json(*edge) for edge in edges.get(("cpu", rank), [])]
        return RankState(rank, cpu, "; ".join(words) or "finished: every op completed", ops, waits)

    def _creation_words(self, rank: int, comm: Communicator) -> str:
        entry = self.entries[rank][self.pc[rank]]
        missing = [f"{m}" if m in self.entries and self.pc[m] < len(self.entries[m])
                   else f"{m} (which never uses it)"
                   for m in comm.members if m not in self.arrived.get(comm, set())]
        if rank == comm.root or comm.root in self.arrived.get(comm, set()):
            how = ("in ncclCommInitRank, which no NCCL or store timeout bounds "
                   "(only TORCH_NCCL_USE_COMM_NONBLOCKING=1 does)")
        else:
            how = (f"waiting in the store for the ncclUniqueId rank {comm.root} publishes "
                   f"(bounded by the store timeout)")
        return (f"inside the creation of communicator {comm.name} for its "
                f"{self._desc(entry[0], where=False)}, {how}; needs rank(s) "
                f"{', '.join(map(str, missing))}")

    def _desc(self, key: Key, where: bool = True) -> str:
        op = self.ops[key]
        text = op.words() + (f" on {self.comm[key].name}" if where else "")
        return text + (f" in {op.call}" if op.call else "")

    def _node_words(self, node: Node) -> str:
        if node[0] == "op":
            op = self.ops[node[1:]]
            return f"rank {node[1]}'s {op.words()} on {self.comm[node[1:]].name}"
        comm = self._creating(node[1])
        if comm is not None:
            return f"rank {node[1]} (inside the creation of communicator {comm.name})"
        if self.pc[node[1]] == len(self.entries[node[1]]):
            return f"rank {node[1]} (waiting at the end of its ops)"
        return f"rank {node[1]} (waiting for an earlier op)"

    def _cycle_words(self, cycle: list[Node], edges: dict[Node, list]) -> str:
        clauses = []
        for node, nxt in zip(cycle, cycle[1:] + cycle[:1]):
            reason = next(r for target, r in edges[node] if target == nxt)
            here = self._node_words(node)
            if reason == "queued":
                clauses.append(f"{here} is queued behind {self._node_words(nxt)}")
            elif reason == "match":
                op = self.ops[node[1:]]
                other = self.ops[nxt[1:]]
                why = ""
                if op.kind == "send" and self.cond.transport == ZERO_BUFFER:
                    why = " (no send completes before its receive)"
                elif op.kind == "send":
                    why = (f" ({size_words(op.nbytes)} > the {size_words(self.cond.buffer_bytes)} "
                           f"the {self.cond.transport} transport buffers)")
                clauses.append(f"{here} waits for rank {nxt[1]}'s matching {other.api.upper()}{why}")
            elif reason == "not issued":
                clauses.append(f"{here} waits for rank {nxt[1]} to issue the matching op")
            elif reason == "join":
                clauses.append(f"{here} waits for rank {nxt[1]} to join it")
            elif reason == "group":
                clauses.append(f"{here} completes only with {self._node_words(nxt)}, issued in "
                               f"the same batch_isend_irecv (one NCCL group: its ops complete "
                               f"together)")
            else:
                target = self.ops[nxt[1:]]
                clauses.append(f"{here} waits for its {target.words()} on "
                               f"{self.comm[nxt[1:]].name}")
        return "; ".join(clauses) + ": a cycle" if clauses else ""


def _pair_side(op: Op) -> dict[str, Any]:
    return {"rank": op.rank, "index": op.index, "api": op.api, "peer": op.peer,
            "bytes": op.nbytes, "dtype": op.dtype or None, "site": op.where or None,
            "chosen": op.chosen or None,
            "role": op.role or None, "call": op.call or None}


