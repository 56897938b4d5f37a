"""What the recorder keeps per op, batch, coalescing window, thread, process group and Work, and
the fragments of a trace line each of them contributes (formatted once, then reused).

Plain slotted records: the recorder creates one `TracedOp` (and at most one `WorkRef`) per intercepted
call, so their cost is on the hot path that benchmarks/bench_record.py measures.
"""

from __future__ import annotations

import json
import threading
import weakref
from typing import Any

COMPACT = (",", ":")


class ThreadState:
    """Per thread: read through `PerThread.state` once per call (an attribute of a threading.local
    costs several times a plain slot's)."""

    __slots__ = ("depth", "batch", "ident")

    def __init__(self) -> None:
        self.depth = 0  # > 0 inside a hooked call: nested hooked calls (recv -> irecv) are not ops
        self.batch: Batch | None = None  # the batch_isend_irecv call this thread is inside
        self.ident = threading.get_ident()


class PerThread(threading.local):
    def __init__(self) -> None:
        self.state = ThreadState()


class TracedGroup:
    """What a trace line says about a process group, computed once per group object."""

    __slots__ = ("name", "ranks", "my_rank", "index", "eager", "json", "ref", "whole", "paired")

    def __init__(self, pg: Any, c10d: Any) -> None:
        self.ranks: list[int] = list(c10d.get_process_group_ranks(pg))
        self.index = {g: i for i, g in enumerate(self.ranks)}
        self.my_rank: int = pg.rank()
        self.name = str(pg.group_name)
        # NCCL creates a group's communicators at init when the group is bound to a device
        # (`init_process_group(device_id=...)`): eager. Otherwise at first use: lazy.
        self.eager = getattr(pg, "bound_device_id", None) is not None
        # Communicators this rank has made on this group so far, under lazy init: the group's own
        # (`whole`), and one per peer it did unbatched P2P with (`paired`, global ranks).
        self.whole = False
        self.paired: set[int] = set()
        self.json = json.dumps({
            "ranks": self.ranks, "size": len(self.ranks), "desc": getattr(pg, "group_desc", None),
            "name": self.name, "backend": str(c10d.get_backend(pg)), "eager": self.eager,
        }, separators=COMPACT)
        self.ref = json.dumps(self.name)  # what op lines say once the group line is written

    def comm_mark(self, whole_group: bool, peer: int | None) -> str:
        """`,"comm_init":...` on the op that would create a communicator under lazy init: the
        first batched or collective use of the group (its own communicator), the first unbatched
        P2P between two of its ranks (a 2-rank communicator keyed `low:high` in group ranks).
        Callers skip it when `whole` / `paired` already say so (the hot path)."""
        if whole_group:
            self.whole = True
            return ',"comm_init":{"kind":"group","key":"all"}'
        other = self.index.get(peer) if peer is not None else None
        if other is None:
            return ""
        self.paired.add(peer)  # type: ignore[arg-type]  # in `index`, so a rank
        low, high = min(self.my_rank, other), max(self.my_rank, other)
        return f',"comm_init":{{"kind":"pair","key":"{low}:{high}"}}'


class TracedOp:
    """One op between its start line and its end. `work`: the Work it completes with, once the
    call returned one; `in_window`: it completes with its coalescing window's Work."""

    __slots__ = ("seq", "t", "api", "group", "line", "work", "in_window", "thread")
    seq: int
    t: float  # seconds since the trace's start
    line: str  # the op's start line, as written

    def __init__(self, api: str, group: TracedGroup | None, thread: int, in_window: bool) -> None:
        # seq, t and line are set by the start line's `_emit_locked`, before anyone reads them.
        self.thread = thread
        self.api = api
        self.group = group
        self.work: WorkRef | None = None
        self.in_window = in_window


class WorkRef(weakref.ref):
    """A weak reference to a Work the recorder tracks, knowing its key in `Recorder.works` (the
    Work's id) after the Work died: one shared callback then queues it, no closure per Work."""

    __slots__ = ("key",)
    key: int


class Batch:
    """One batch_isend_irecv call: pairs each op torch issues with the P2POp it came from."""

    __slots__ = ("ops", "cursor", "id")

    def __init__(self, ops: list[Any], batch_id: int) -> None:
        self.ops = ops
        self.cursor = 0
        self.id = batch_id

    def take(self, tensor: Any) -> Any:
        ops = self.ops
        if self.cursor < len(ops) and getattr(ops[self.cursor], "tensor", None) is tensor:
            self.cursor += 1
            return ops[self.cursor - 1]
        return next((op for op in ops if getattr(op, "tensor", None) is tensor), None)


class Window:
    """A coalescing window (`ProcessGroup._start_coalescing` .. `_end_coalescing`) open on a group:
    the ops issued inside it, which complete with the Work its end returns."""

    __slots__ = ("ops", "batch")

    def __init__(self, batch: int) -> None:
        self.ops: list[TracedOp] = []
        self.batch = batch


def fields_json(details: dict[str, Any]) -> str:
    """`,"key":value...` of a setup call's or an end's details."""
    return "".join(f',"{k}":{json.dumps(v, default=str, separators=COMPACT)}'
                   for k, v in details.items())


_TENSORS: dict[Any, dict[Any, str]] = {}  # dtype -> shape -> its trace fragment


def tensor_json(value: Any) -> str:
    """`"shape":[..],"dtype":".."` of a tensor, or of the first tensor in a list of them."""
    try:
        shape, dtype = value.shape, value.dtype
    except AttributeError:
        if isinstance(value, (list, tuple)) and value:
            return tensor_json(value[0])
        return '"shape":null,"dtype":null'
    shapes = _TENSORS.get(dtype)
    if shapes is None:
        shapes = _TENSORS[dtype] = {}
    text = shapes.get(shape)
    if text is None:
        name = json.dumps(str(dtype).replace("torch.", ""))
        text = f'"shape":[{",".join(map(str, shape))}],"dtype":{name}'
        if len(shapes) < 4096:
            shapes[shape] = text
    return text
