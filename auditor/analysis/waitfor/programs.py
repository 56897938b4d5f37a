"""Per-rank programs (the replay's `Op`s) from the events of a recorded trace."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from auditor.analysis.waitfor.model import Group, Op, wire_parts
from auditor.analysis.waitfor.sizes import DTYPE_BYTES


def programs_from_events(events_by_rank: Mapping[int, Sequence[Mapping[str, Any]]],
                         roles: Mapping[tuple[str, int], str] | None = None) -> dict[int, list[Op]]:
    """Per-rank programs from trace events (trace lines as auditor/dynamic/trace.py reads them).

    A start event of kind p2p or collective is an op. An end event seen before a later start
    means the rank had learned of that op's completion before issuing the later one, so the
    later op waits for it. `batch` names the batch_isend_irecv call an op came from and
    `batched` whether a coalescing group really ran around it (`Op.coalesced`); consecutive
    batched ops without a batch id count as one batch. `roles`: (path, line) of the P2POp that
    built an op -> the neighbour it is meant for (`runreplay.p2p_roles`).
    """
    programs: dict[int, list[Op]] = {}
    world = sorted(set(events_by_rank))
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
                    where=_where(event.get("op_site") or site), role=_role(event, roles),
                    chosen=_where(event.get("chosen") or {}))
            ended = []
            ops.extend(_on_the_wire(op))
            by_seq[event.get("seq")] = len(ops) - 1  # its last part ends with it
        programs[rank] = ops
    return programs


def _on_the_wire(op: Op) -> list[Op]:
    """`op` as the ops torch puts on the wire (`wire_parts`): an object list's sizes, then its
    bytes once the sizes have arrived; each part of unrecorded size, at least one element."""
    parts = wire_parts(op.api)
    if not parts:
        return [op]
    return [replace(op, index=op.index + n, dtype=dtype, nbytes=DTYPE_BYTES[dtype], sized=False,
                    after=(op.index + n - 1,) if n else op.after)
            for n, dtype in enumerate(parts)]


def _where(site: Mapping[str, Any]) -> str:
    """path:line of the code that built the op (the P2POp) or, without one, that issued it."""
    return f"{site['path']}:{site['line']}" if site.get("path") else ""


def _role(event: Mapping[str, Any], roles: Mapping[tuple[str, int], str] | None) -> str:
    built: Mapping[str, Any] = event.get("op_site") or {}
    return roles.get((built.get("path", ""), built.get("line", 0)), "") if roles and built else ""


def _event_bytes(event: Mapping[str, Any]) -> int:
    if isinstance(event.get("bytes"), int):
        return event["bytes"]
    shape = event.get("shape") or []
    dtype = str(event.get("dtype") or "float32").removeprefix("torch.")
    return math.prod(int(d) for d in shape) * DTYPE_BYTES.get(dtype, 4)
