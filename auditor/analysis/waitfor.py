"""Wait-for analysis: would these per-rank op sequences hang under NCCL, and what waits on what.

A hang in pipeline P2P is a cycle of waits that no single rank's view shows, so this replays the
ranks' op sequences against a small model of NCCL under torch and reports the cycle in words
(and per rank, op by op, for the HTML report). The model, from docs/findings.md sections 1 and 4:

- Communicator selection: a coalesced batch runs on its group's communicator; an unbatched P2P op
  under lazy init runs on a 2-rank communicator of its pair (`group:low-high`); under eager init
  (`init_process_group(device_id=...)`) on the group's communicator, serialised with all else on
  it; a collective runs on its group's communicator.
- Lazy creation is a blocking rendezvous: a rank that first uses a communicator stays inside its
  creation until every member has reached the creation of that same communicator.
- Stream order: each (rank, communicator) has one stream; an op starts only when everything
  issued before it on that stream has completed. A coalesced batch is one entry whose parts run
  together.
- Buffering: a send of at most `buffer_bytes` completes once it starts; a larger one completes
  only while its matching receive runs too. A receive completes once its matching send started.
  Sends and receives match in order per (communicator, source, destination); NCCL has no tags.
- CPU: ops are asynchronous; a rank stops issuing only inside a communicator creation, or where
  its program waits for earlier ops (`Op.after`).

gloo (`Conditions.gloo()`, what a CPU recording ran on) is another model, as measured on gloo
(`p2paudit doctor --backend gloo`, tests/test_repro.py, tests/test_join.py): no coalescing (a
batch runs op by op), no communicator to create (gloo connects a group's ranks when the group is
made), no stream order (each op runs on its own as soon as it is issued), no buffering (a send
completes once its receive is issued, a receive once its send is). Matching is in order per
(group, source, destination).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from auditor import rulebook

MiB = 1 << 20



@dataclass(frozen=True)
class Transport:
    """One transport's bound (rules/nccl.toml): a send of at most `completes_bytes` completes with
    its receive not running; one of at least `hangs_bytes` waits for it; between the two (or above
    `completes_bytes` where nothing was seen to hang) nobody knows, and the verdict says so."""

    name: str  # as NCCL_DEBUG=INFO names it: "NET/IB"
    model_name: str  # as --transport names it: "net-ib"
    bound: str  # "measured" or "derived" (read from NCCL's sources, never measured here)
    completes_bytes: int
    hangs_bytes: int | None
    per_channel: int | None
    evidence: str

    def words(self) -> str:
        hangs = f", {size_words(self.hangs_bytes)} hangs" if self.hangs_bytes else \
            ", nothing larger measured"
        channel = f", {size_words(self.per_channel)} per channel" if self.per_channel else ""
        return f"{self.name} ({self.bound}: {size_words(self.completes_bytes)} completes{hangs}{channel})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "model_name": self.model_name, "bound": self.bound,
                "completes_bytes": self.completes_bytes, "hangs_bytes": self.hangs_bytes,
                "per_channel": self.per_channel, "evidence": self.evidence}


def _nccl_rules() -> dict[str, Any]:
    return rulebook.load("nccl").data


def transports() -> dict[str, Transport]:
    """Every transport of rules/nccl.toml, by the name --transport gives it."""
    return {t["model_name"]: Transport(t["name"], t["model_name"], t["bound"],
                                       t["completes_bytes"], t.get("hangs_bytes"),
                                       t.get("per_channel"), t["evidence"])
            for t in _nccl_rules()["transport"]}


def transport_names() -> list[str]:
    """What --transport accepts: a transport, or a topology (`node`, `net`) naming several."""
    return sorted({*transports(), *_nccl_rules()["topology"]})


def candidates(transport: str) -> tuple[Transport, ...]:
    """The transports `transport` leaves possible: itself, or those of a topology."""
    known = transports()
    names = _nccl_rules()["topology"].get(transport, [transport])
    if any(n not in known for n in names):
        raise ValueError(f"unknown transport {transport!r}; one of {transport_names()}")
    return tuple(known[n] for n in names)


def nccl_version(torch_version: str | None) -> str | None:
    """The NCCL torch's Linux wheel pins, where rules/nccl.toml knows it and its sources were read;
    None otherwise, so that an unread release is shown as read against others, never as itself."""
    nccl = _nccl_rules()["nccl"]
    pin = nccl["torch"].get((torch_version or "").split("+")[0], {}).get("nccl")
    return pin if pin in nccl["versions"] else None


# What a send can leave behind without its receive running, per --transport name: the largest size
# one of its candidate transports is known to complete. This is the single replay's bound; the two
# deadlock verdicts (`deadlock`) read each candidate's whole range.
# The replay of MUST's zero-buffer contract: every send waits for its receive.
ZERO_BUFFER = "zero-buffer"
TRANSPORT_BUFFER: dict[str, int] = {
    name: max(t.completes_bytes for t in candidates(name)) for name in transport_names()}


SEND_APIS = frozenset({"send", "isend"})
RECV_APIS = frozenset({"recv", "irecv"})
DTYPE_BYTES = {
    "float64": 8, "double": 8, "int64": 8, "long": 8, "complex64": 8,
    "float32": 4, "float": 4, "int32": 4, "int": 4,
    "bfloat16": 2, "float16": 2, "half": 2, "int16": 2,
    "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}


@dataclass(frozen=True)
class Group:
    ranks: tuple[int, ...]  # global ranks, ascending (torch sorts them in new_group)
    desc: str = ""

    def __hash__(self) -> int:  # hashed for every op of a replay: a 1,024-rank tuple once
        return _cached_hash(self, (self.ranks, self.desc))

    @property
    def label(self) -> str:
        return self.desc or "group[" + ",".join(map(str, self.ranks)) + "]"


@dataclass(frozen=True)
class Op:
    """One op as a rank issues it. `index` is its position in the rank's program."""

    rank: int
    index: int
    api: str  # isend, irecv, send, recv, or a collective's name
    group: Group
    peer: int | None = None  # global rank, for P2P
    nbytes: int = 0
    batch: int | str | None = None  # ops handed to one batch_isend_irecv call share an id
    coalesced: bool | None = None  # as recorded: did a coalescing group really run around it
    after: tuple[int, ...] = ()  # this rank's ops that completed before this one was issued
    call: str = ""  # the caller, e.g. "P2PCommunicator.send_forward_recv_backward"
    dtype: str = ""  # as recorded ("" when the trace does not say)
    where: str = ""  # path:line of the code that built it (its P2POp), else of the call
    role: str = ""  # the neighbour it is meant for ("prev"/"next"), where the code says

    @property
    def kind(self) -> str:
        if self.api in SEND_APIS:
            return "send"
        if self.api in RECV_APIS:
            return "recv"
        return "collective"

    def words(self) -> str:
        if self.kind == "send":
            return f"{self.api.upper()} to {self.peer} ({size_words(self.nbytes)})"
        if self.kind == "recv":
            return f"{self.api.upper()} from {self.peer} ({size_words(self.nbytes)})"
        return self.api.upper()


@dataclass(frozen=True)
class Conditions:
    """The run-time facts the op sequence alone does not fix."""

    init: str = "lazy"  # "lazy" or "eager" (device_id given to init_process_group)
    # Does batch_isend_irecv coalesce here (torch version, backend, debug level: `p2paudit
    # doctor` says)? None: as each op was recorded (`Op.coalesced`), and yes where not recorded.
    coalesce: bool | None = None
    buffer_bytes: int = TRANSPORT_BUFFER["net"]
    transport: str = "net"
    backend: str = "nccl"  # "gloo": the gloo model of the module docstring

    @classmethod
    def gloo(cls, init: str = "lazy") -> Conditions:
        """What gloo itself does (`init` is kept for the report: gloo has no lazy creation)."""
        return cls(init, False, TRANSPORT_BUFFER["gloo"], "gloo", "gloo")

    @classmethod
    def for_transport(cls, transport: str, init: str = "lazy",
                      coalesce: bool | None = None) -> Conditions:
        if transport not in TRANSPORT_BUFFER:
            raise ValueError(f"unknown transport {transport!r}; one of {sorted(TRANSPORT_BUFFER)}")
        if init not in ("lazy", "eager"):
            raise ValueError(f"init must be 'lazy' or 'eager', not {init!r}")
        return cls(init, coalesce, TRANSPORT_BUFFER[transport], transport)

    def to_json(self) -> dict[str, Any]:
        return {"init": self.init, "coalesce": self.coalesce, "buffer_bytes": self.buffer_bytes,
                "transport": self.transport, "backend": self.backend}

    def words(self) -> str:
        if self.backend == "gloo":
            return ("gloo (batch_isend_irecv runs op by op, no communicator creation, no stream "
                    "order, a send completes once its receive is issued)")
        batch = {True: "coalesces", False: "runs op by op", None: "as recorded"}[self.coalesce]
        return (f"{self.init} init, batch_isend_irecv {batch}, {self.transport} transport "
                f"(sends up to {size_words(self.buffer_bytes)} complete unmatched)")


@dataclass(frozen=True)
class Communicator:
    name: str
    members: tuple[int, ...]
    root: int  # creates the ncclUniqueId and publishes it through the store
    group: tuple[int, ...] = ()  # its process group's ranks: groups may share a description

    def __hash__(self) -> int:
        return _cached_hash(self, (self.name, self.members, self.root, self.group))


def _cached_hash(obj: Any, fields: tuple) -> int:
    value = obj.__dict__.get("_hash")
    if value is None:
        value = hash(fields)
        object.__setattr__(obj, "_hash", value)
    return value


def communicator_for(op: Op, conditions: Conditions, coalesced: bool) -> Communicator:
    """The NCCL communicator `op` runs on (docs/findings.md §1: lazy pair communicators, eager serialisation)."""
    group = op.group
    if op.kind == "collective" or coalesced or conditions.init == "eager" \
            or conditions.backend == "gloo":
        return Communicator(group.label, group.ranks, min(group.ranks), group.ranks)
    low, high = sorted((op.rank, op.peer))
    return Communicator(f"{group.label}:{low}-{high}", (low, high), low, group.ranks)


Key = tuple[int, int]  # (rank, index)
Node = tuple  # ("cpu", rank) | ("op", rank, index)
Stream = tuple  # (rank, communicator); gloo: (rank, communicator, the op's key)


@dataclass
class OpState:
    op: Op
    communicator: str
    coalesced: bool
    state: str  # done | blocked | queued | not_issued
    blocked_on: dict[str, Any] | None = None  # a wait-for edge (_edge_json)
    members: tuple[int, ...] = ()  # the ranks of the communicator the op runs on

    def to_json(self) -> dict[str, Any]:
        op = self.op
        return {"index": op.index, "api": op.api, "peer": op.peer, "bytes": op.nbytes,
                "group": {"ranks": list(op.group.ranks), "desc": op.group.desc},
                "batch": op.batch, "coalesced": self.coalesced, "call": op.call,
                "communicator": self.communicator, "state": self.state,
                "blocked_on": self.blocked_on}


@dataclass
class RankState:
    rank: int
    cpu: str  # finished | creating | waiting
    words: str  # where this rank is, in one clause
    ops: list[OpState] = field(default_factory=list)
    blocked_on: list[dict[str, Any]] = field(default_factory=list)  # what its CPU waits for

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "cpu": self.cpu, "words": self.words,
                "blocked_on": self.blocked_on, "ops": [o.to_json() for o in self.ops]}


@dataclass
class Analysis:
    hang: bool
    conditions: Conditions
    ranks: dict[int, RankState]
    cycle: str  # the wait-for cycle in words; "" when none
    blocked: list[str]  # one sentence per blocked rank
    # Send/receive pairs (as FIFO order per communicator pairs them) whose sizes or dtypes differ:
    # the receiver gets other bytes than were sent, silently or as a hang.
    mismatched_pairs: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> str:
        if not self.hang:
            return f"no hang: every op completes ({self.conditions.words()})"
        head = f"HANG ({self.conditions.words()})"
        body = "\n".join(f"  {line}" for line in self.blocked)
        tail = f"\n  wait-for cycle: {self.cycle}" if self.cycle else \
            "\n  no cycle: a rank waits for an op nobody issues"
        return f"{head}\n{body}{tail}"

    def to_json(self) -> dict[str, Any]:
        return {"hang": self.hang, "conditions": self.conditions.to_json(),
                "cycle": self.cycle, "blocked": self.blocked,
                "mismatched_pairs": self.mismatched_pairs,
                "ranks": [r.to_json() for r in self.ranks.values()]}


def analyze(programs: Mapping[int, Sequence[Op]], conditions: Conditions) -> Analysis:
    """Replay every rank's ops under `conditions` until nothing moves; explain what is left."""
    return _Replay(programs, conditions).run()


@dataclass
class TransportVerdict:
    """Will this order deadlock over one transport: True, False, or None where the sizes that
    decide it lie between what the transport is known to complete and what it is known to hang."""

    transport: Transport
    will: bool | None
    why: str
    decide: str = ""  # what would decide it, where `will` is None

    def to_json(self) -> dict[str, Any]:
        return {"transport": self.transport.to_json(), "will_deadlock": self.will,
                "why": self.why, "decide": self.decide or None}


@dataclass
class Deadlock:
    """MUST's two verdicts on one op order. `can`: it deadlocks under the zero-buffer contract
    (every send waits for its receive), so some transport and size hangs it. `will`: it
    deadlocks here, with the bound of each transport the run may use (`asked`: --transport or
    the topology) and the recorded sizes; None: undecided, each transport's `decide` says by what."""

    can: bool
    will: bool | None
    asked: str
    transports: list[TransportVerdict]
    cycle: str  # the zero-buffer replay's cycle in words ("" when it completes)
    nccl: str  # the NCCL release the bounds are read against
    cycle_here: str = ""  # where `will`: the cycle with the first hanging transport's bound
    where: str = ""  # path:line of the first send left waiting (the cycle_here replay, else zero's)

    def decide(self) -> str:
        """What decides an undecided `will`."""
        if len({v.will for v in self.transports}) > 1:
            which = " or ".join(v.transport.model_name for v in self.transports)
            return (f"--transport {which} (which one the cluster uses: NCCL_DEBUG=INFO prints "
                    f"'via ...' per channel)")
        return "; ".join(f"{v.transport.name}: {v.decide}" for v in self.transports if v.decide)

    def words(self) -> str:
        can = ("can deadlock: yes, under the zero-buffer contract (every send waits for its "
               f"receive): {self.cycle}" if self.can else
               "can deadlock: no, every op completes even if no send is buffered")
        will = {True: "yes", False: "no", None: "undecided"}[self.will]
        each = "; ".join(f"{v.transport.name}: {({True: 'yes', False: 'no', None: 'undecided'})[v.will]}"
                         f" ({v.why})" for v in self.transports)
        return f"{can}\nwill deadlock here ({self.asked}): {will}: {each}"

    def to_json(self) -> dict[str, Any]:
        return {"can_deadlock": self.can, "will_deadlock": self.will, "transport": self.asked,
                "cycle": self.cycle, "cycle_here": self.cycle_here, "where": self.where,
                "nccl": self.nccl,
                "decide": self.decide() if self.will is None else None,
                "transports": [v.to_json() for v in self.transports]}


def deadlock(replay: Callable[[Conditions], Analysis], conditions: Conditions,
             asked: str | None = None, torch_version: str | None = None) -> Deadlock:
    """The two verdicts on the order `replay` replays (under `conditions`' init and coalescing).

    Per transport, two replays bracket the truth: one where only sends up to `completes_bytes`
    complete unmatched (if it completes, the order completes), one where every send below
    `hangs_bytes` does (if it hangs, the order hangs); a larger buffer never adds a hang.
    """
    asked = asked or conditions.transport
    runs: dict[int, Analysis] = {}

    def hangs(buffer: int, transport: str) -> Analysis:
        if buffer not in runs:
            runs[buffer] = replay(replace(conditions, buffer_bytes=buffer, transport=transport))
        return runs[buffer]

    zero = hangs(0, ZERO_BUFFER)
    verdicts = []
    here: Analysis | None = None
    for t in candidates(asked):
        if not zero.hang:
            verdicts.append(TransportVerdict(t, False, "completes with no send buffered"))
            continue
        low = hangs(t.completes_bytes, t.model_name)
        if not low.hang:
            verdicts.append(TransportVerdict(
                t, False, f"completes: no send that must wait exceeds the "
                          f"{size_words(t.completes_bytes)} it completes unmatched"))
            continue
        high = hangs(t.hangs_bytes - 1 if t.hangs_bytes else 1 << 62, t.model_name)
        if high.hang:
            here = here or low
            verdicts.append(TransportVerdict(t, True, (
                f"hangs even if every send below {size_words(t.hangs_bytes)} completed "
                f"unmatched ({t.bound})" if t.hangs_bytes else
                "hangs whatever the transport buffers")))
            continue
        waiting = sorted({o.op.nbytes for r in low.ranks.values() for o in r.ops
                          if o.state == "blocked" and o.op.kind == "send"})
        between = ", ".join(size_words(n) for n in waiting) or "the sends left waiting"
        if t.hangs_bytes is None:
            why = (f"{between} > the {size_words(t.completes_bytes)} seen to complete; nothing "
                   "larger was measured")
            decide = "a measurement of larger sends (reports/glm5.1-pp-hang/gpu/run.sh)"
        else:
            why = (f"{between} between the {size_words(t.completes_bytes)} that completes and "
                   f"the {size_words(t.hangs_bytes)} that hangs ({t.bound})")
            decide = (f"the channels that serve each peer ({size_words(t.per_channel)} each; "
                      "NCCL_DEBUG=INFO's 'Channel xx/yy ... via' lines)" if t.per_channel else
                      "a measurement on the cluster (p2paudit repro fallback-1f1b --size)")
        verdicts.append(TransportVerdict(t, None, why, decide))
    outcomes = {v.will for v in verdicts}
    will = outcomes.pop() if len(outcomes) == 1 else None
    known = nccl_version(torch_version)
    nccl = (f"{known} (torch {torch_version}'s pin)" if known else
            "read against NCCL " + ", ".join(_nccl_rules()["nccl"]["versions"])
            + (f"; torch {torch_version}'s NCCL is not in rules/nccl.toml" if torch_version else ""))
    shown = here if will and here else zero
    return Deadlock(zero.hang, will, asked, verdicts, zero.cycle, nccl,
                    here.cycle if will and here else "", _first_blocked_send(shown))


def _first_blocked_send(a: Analysis) -> str:
    return next((o.op.where for r in a.ranks.values() for o in r.ops
                 if o.state == "blocked" and o.op.kind == "send" and o.op.where), "")


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
        self.pc = {rank: 0 for rank in self.entries}
        self.arrived: dict[Communicator, set[int]] = {}
        self.created: set[Communicator] = set()
        if conditions.init == "eager" or conditions.backend == "gloo":
            self.created = set(self.comm.values())  # group communicators, made with the group
        self.streams_per_op = conditions.backend == "gloo"  # gloo runs each op on its own
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
            coalesce = self.cond.coalesce
            if self.cond.backend == "gloo":
                coalesce = False
            elif coalesce is None:
                coalesce = op.coalesced is not False
            coalesced = coalesce and op.batch is not None and op.kind != "collective"
            self.coalesced[key] = coalesced
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
        match: dict[Key, tuple[Key, ...] | None] = {key: None for key in self.ops}
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
        return match

    def _check_pair(self, send: Key, recv: Key) -> None:
        """A pair disagrees in size, dtype, or role: a send meant for the next stage must be
        received as from the previous one (`Op.role`), or the tensors silently swap."""
        a, b = self.ops[send], self.ops[recv]
        sizes = a.nbytes != b.nbytes and a.nbytes > 0 and b.nbytes > 0
        dtypes = a.dtype != b.dtype and a.dtype and b.dtype
        roles = a.role and b.role and a.role == b.role
        if sizes or dtypes or roles:
            self.mismatched.append({
                "communicator": self.comm[send].name,
                "what": " and ".join(w for w, bad in (("size", sizes), ("dtype", dtypes),
                                                      ("role", roles)) if bad),
                "send": _pair_side(a), "recv": _pair_side(b)})

    # --- replay --------------------------------------------------------------------------------
    def run(self) -> Analysis:
        moved = True
        while moved:
            moved = False
            for rank in self.entries:
                moved |= self._issue(rank)
            for stream in list(self.streams):
                moved |= self._progress(stream)
        return self._explain()

    def _issue(self, rank: int) -> bool:
        moved = False
        entries = self.entries[rank]
        while self.pc[rank] < len(entries):
            entry = entries[self.pc[rank]]
            if any((rank, i) not in self.done for key in entry for i in self.ops[key].after):
                return moved
            comm = self.comm[entry[0]]
            if comm not in self.created:
                arrived = self.arrived.setdefault(comm, set())
                if rank not in arrived:
                    arrived.add(rank)
                    moved = True
                if not set(comm.members) <= arrived:
                    return moved
                self.created.add(comm)
            stream = (rank, comm, entry[0]) if self.streams_per_op else (rank, comm)
            queue = self.streams.setdefault(stream, [])
            self.head.setdefault(stream, 0)
            for key in entry:
                self.where[key] = (stream, len(queue))
            queue.append(entry)
            self.pc[rank] += 1
            moved = True
        return moved

    def _active(self, key: Key) -> bool:
        place = self.where.get(key)
        return place is not None and self.head[place[0]] == place[1]

    def _completes(self, key: Key) -> bool:
        op, partners = self.ops[key], self.match[key]
        if op.kind == "send" and op.nbytes <= self.cond.buffer_bytes:
            return True
        # A large send needs its receive running; a receive, its send started; a collective, all.
        return partners is not None and all(p in self.done or self._active(p) for p in partners)

    def _progress(self, stream: Stream) -> bool:
        moved = False
        queue = self.streams[stream]
        while self.head[stream] < len(queue):
            entry = queue[self.head[stream]]
            for key in entry:
                if key not in self.done and self._completes(key):
                    self.done.add(key)
                    moved = True
            if not all(key in self.done for key in entry):
                return moved
            self.head[stream] += 1
            moved = True
        return moved

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
        cycle = _find_cycle(edges) if hang else []
        ops_first = [i for i, node in enumerate(cycle) if node[0] == "op"]
        if ops_first:  # read from an op: "rank 0's SEND ... waits for ..."
            cycle = cycle[ops_first[0]:] + cycle[:ops_first[0]]
        ranks = {rank: self._rank_state(rank, edges) for rank in self.entries}
        blocked = [f"rank {r}: {s.words}" for r, s in ranks.items() if s.cpu != "finished"]
        return Analysis(hang, self.cond, ranks, self._cycle_words(cycle, edges), blocked,
                        self.mismatched)

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
        raise AssertionError(f"{key} is active with all partners running but did not complete")

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
                blocked_on = _edge_json(*edges[node][0]) if node in edges else None
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
        comm = self._creating(rank)
        if comm is not None:
            words.append(self._creation_words(rank, comm))
            cpu = "creating"
        elif ("cpu", rank) in edges:
            cpu = "waiting"
        else:
            cpu = "finished"
        waits = [_edge_json(*edge) for edge in edges.get(("cpu", rank), [])]
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
            else:
                target = self.ops[nxt[1:]]
                clauses.append(f"{here} waits for its {target.words()} on "
                               f"{self.comm[nxt[1:]].name}")
        return "; ".join(clauses) + ": a cycle" if clauses else ""


def _pair_side(op: Op) -> dict[str, Any]:
    return {"rank": op.rank, "index": op.index, "api": op.api, "peer": op.peer,
            "bytes": op.nbytes, "dtype": op.dtype or None, "site": op.where or None,
            "role": op.role or None, "call": op.call or None}


def _edge_json(target: Node | None, reason: str) -> dict[str, Any]:
    """A wait-for edge for the report: the rank and op waited on (index None: the rank's CPU)."""
    return {"rank": target[1] if target else None,
            "index": target[2] if target and target[0] == "op" else None, "reason": reason}


def _find_cycle(edges: dict[Node, list[tuple[Node | None, str]]]) -> list[Node]:
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
    lazy = conditions.init == "lazy" and conditions.backend != "gloo"
    # Per op, once: its lane, its partners' (rank, lane) and its communicator, as small ints.
    ids: dict[Any, int] = {}
    lane_of: dict[Key, int] = {}
    partners_of: dict[Key, list[tuple[int, int]]] = {}
    comm_of: dict[Key, int] = {}
    members: dict[int, tuple[int, ...]] = {}
    for rank, program in programs.items():
        for op in program[:n[rank]]:
            coalesce = conditions.coalesce
            if conditions.backend == "gloo":
                coalesce = False
            elif coalesce is None:
                coalesce = op.coalesced is not False
            coalesced = coalesce and op.batch is not None and op.kind != "collective"
            comm = communicator_for(op, conditions, coalesced)
            key = (rank, op.index)
            cid = comm_of[key] = ids.setdefault(comm, len(ids))
            members[cid] = comm.members
            lane_of[key] = ids.setdefault(_lane(op, cid), len(ids))
            if op.kind == "collective":
                partners_of[key] = [(m, ids.setdefault(("coll", cid, m), len(ids)))
                                    for m in comm.members if m != rank]
            else:
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


def size_words(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{round(nbytes / scale, 2):g} {unit}"
    return f"{nbytes} B"


# --- from recorded traces -----------------------------------------------------------------------
def programs_from_events(events_by_rank: Mapping[int, Sequence[Mapping[str, Any]]],
                         roles: Mapping[tuple[str, int], str] | None = None) -> dict[int, list[Op]]:
    """Per-rank programs from trace events (trace lines as auditor/dynamic/trace.py reads them).

    A start event of kind p2p or collective is an op. An end event seen before a later start
    means the rank had learned of that op's completion before issuing the later one, so the
    later op waits for it. `batch` names the batch_isend_irecv call an op came from and
    `batched` whether a coalescing group really ran around it (`Op.coalesced`); consecutive
    batched ops without a batch id count as one batch. `roles`: (path, line) of the P2POp that
    built an op -> the neighbour it is meant for (`join.p2p_roles`).
    """
    programs: dict[int, list[Op]] = {}
    world = sorted({r for r in events_by_rank})
    groups: dict[int, tuple[Any, Group]] = {}  # id(group dict) -> (it, its Group): made once
    for rank, events in events_by_rank.items():
        ops: list[Op] = []
        by_seq: dict[Any, int] = {}
        ended: list[int] = []
        unnamed = 0  # synthetic ids for batched runs recorded without one
        for event in events:
            phase = event.get("phase")
            if phase == "end" or event.get("batched") is not True:
                unnamed += 1
            if phase == "end":
                index = by_seq.get(event.get("of"))
                if index is not None and event.get("how") != "dropped":
                    ended.append(index)
                continue
            if phase != "start" or event.get("kind", "p2p") not in ("p2p", "collective"):
                continue
            group = event.get("group") or {}
            known = groups.get(id(group))
            if known is None or known[0] is not group:
                known = groups[id(group)] = (group, Group(tuple(sorted(group.get("ranks") or world)),
                                                          str(group.get("desc") or "")))
            site = event.get("site") or {}
            batch = event.get("batch")
            if batch is None and event.get("batched"):
                batch = f"unnamed-{unnamed}"
            op = Op(rank=rank, index=len(ops), api=str(event.get("api")),
                    group=known[1],
                    peer=event.get("peer"), nbytes=_event_bytes(event), batch=batch,
                    coalesced=bool(event.get("batched")),
                    after=tuple(sorted(set(ended))) if ended else (),
                    call=str(site.get("function") or ""),
                    dtype=str(event.get("dtype") or "").removeprefix("torch."),
                    where=_where(event.get("op_site") or site), role=_role(event, roles))
            ended = []
            by_seq[event.get("seq")] = op.index
            ops.append(op)
        programs[rank] = ops
    return programs


def _where(site: Mapping[str, Any]) -> str:
    """path:line of the code that built the op (the P2POp) or, without one, that issued it."""
    return f"{site['path']}:{site['line']}" if site.get("path") else ""


def _role(event: Mapping[str, Any], roles: Mapping[tuple[str, int], str] | None) -> str:
    built = event.get("op_site") or {}
    return roles.get((built.get("path"), built.get("line")), "") if roles and built else ""


def _event_bytes(event: Mapping[str, Any]) -> int:
    if isinstance(event.get("bytes"), int):
        return event["bytes"]
    shape = event.get("shape") or []
    dtype = str(event.get("dtype") or "float32").removeprefix("torch.")
    return math.prod(int(d) for d in shape) * DTYPE_BYTES.get(dtype, 4)


def programs_from_trace(trace: Any) -> tuple[dict[int, list[Op]], str | None]:
    """Programs from a trace directory as `auditor.dynamic.trace.read_trace_dir` returns it, and
    the init mode its groups were recorded with ("eager" where device_id bound them; None when
    the trace does not say or ranks differ)."""
    events = {rank: rank_trace.head for rank, rank_trace in trace.ranks.items()}
    return programs_from_events(events), trace.init_mode()
