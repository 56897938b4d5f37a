"""What the wait-for replay replays: each rank's ops (`Op`) on their groups, the run-time
conditions the op sequence alone does not fix, and the communicator each op runs on under them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from auditor import rulebook
from auditor.analysis.waitfor.sizes import size_words
from auditor.analysis.waitfor.transports import TRANSPORT_BUFFER, Transport
from auditor.dynamic.backends import Backend, backend

Key = tuple[int, int]  # an op as (rank, its index in the rank's program)
SEND_APIS = frozenset({"send", "isend"})
RECV_APIS = frozenset({"recv", "irecv"})
# Collectives whose one tensor must have the same size and dtype on every member (NCCL runs
# them on count elements of one datatype, read from each rank's own arguments).
SAME_BUFFER_COLLECTIVES = frozenset({"broadcast", "all_reduce", "reduce"})


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
    chosen: str = ""  # path:line of the framework line that chose it, where not the call's
    role: str = ""  # the neighbour it is meant for ("prev"/"next"), where the code says
    # Whether `nbytes` is the size as recorded; False for a part of an object list, whose size
    # the trace does not give (`nbytes` is then its least): its size is never compared.
    sized: bool = True

    @property
    def kind(self) -> str:
        if self.api in SEND_APIS:
            return "send"
        if self.api in RECV_APIS:
            return "recv"
        return _p2p_directions().get(self.api, "collective")

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
    # The transports the cluster's NCCL_DEBUG=INFO log states, with the bounds it sets
    # (auditor.analysis.ncclbounds); empty: the rules' candidates of `transport`.
    bounds: tuple[Transport, ...] = ()

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

    @property
    def model(self) -> Backend:
        """What the backend these conditions name does (dynamic.backends), asked instead of its
        name."""
        return backend(self.backend)

    def with_bounds(self, bounds: tuple[Transport, ...]) -> Conditions:
        """These conditions over the transports a cluster's log states (none: unchanged): the
        single replay buffers what the largest of them completes, as for a topology."""
        if not bounds:
            return self
        name = bounds[0].model_name if len(bounds) == 1 else self.transport
        return replace(self, bounds=bounds, transport=name,
                       buffer_bytes=max(t.completes_bytes for t in bounds))

    def to_json(self) -> dict[str, Any]:
        return {"init": self.init, "coalesce": self.coalesce, "buffer_bytes": self.buffer_bytes,
                "transport": self.transport, "backend": self.backend}

    def words(self) -> str:
        if not self.model.runs_nccl:
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


@cache
def _p2p_directions() -> dict[str, str]:
    """Every P2P API that issues an op by itself (rules/torch.toml [[p2p_api]], issues = "op") ->
    "send" or "recv", by the parameter that names its peer: send_object_list sends to `dst`,
    recv_object_list receives from `src`, point to point, like send and recv."""
    out = {}
    for api in rulebook.load("torch").data.get("p2p_api", []):
        peer = api.get("peer") or []
        if api.get("issues") == "op" and peer:
            out[api["name"]] = "send" if "dst" in peer or "group_dst" in peer else "recv"
    return out


@cache
def wire_parts(api: str) -> tuple[str, ...]:
    """The dtypes of the ops `api` puts on the wire one after the other (rules/torch.toml
    [[p2p_api]] `wire`: send_object_list sends int64 sizes, then uint8 bytes); () for an API that
    is one op."""
    for entry in rulebook.load("torch").data.get("p2p_api", []):
        if entry.get("name") == api:
            return tuple(entry.get("wire") or ())
    return ()


def _cached_hash(obj: Any, fields: tuple) -> int:
    value = obj.__dict__.get("_hash")
    if value is None:
        value = hash(fields)
        object.__setattr__(obj, "_hash", value)
    return value


def coalesced_for(op: Op, conditions: Conditions) -> bool:
    """Whether `op` runs inside a coalesced group under `conditions`: never on gloo; where the
    conditions leave coalescing open (None), as the op was recorded; only ops of a batch, never
    a collective."""
    coalesce = conditions.coalesce
    if not conditions.model.coalesces:
        coalesce = False
    elif coalesce is None:
        coalesce = op.coalesced is not False
    return bool(coalesce) and op.batch is not None and op.kind != "collective"


def communicator_for(op: Op, conditions: Conditions, coalesced: bool) -> Communicator:
    """The NCCL communicator `op` runs on (docs/findings.md §1: lazy pair communicators, eager serialisation)."""
    group = op.group
    if op.kind == "collective" or coalesced or conditions.init == "eager" \
            or not conditions.model.lazy_communicators:
        return Communicator(group.label, group.ranks, min(group.ranks), group.ranks)
    assert op.peer is not None, "a point-to-point op has a peer"
    low, high = sorted((op.rank, op.peer))
    return Communicator(f"{group.label}:{low}-{high}", (low, high), low, group.ranks)
