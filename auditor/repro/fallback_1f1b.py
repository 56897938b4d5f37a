"""fallback-1f1b: megatron-core 0.17's 1F1B step with every batch issued op by op (docs/findings.md §4).

torch 2.10 under TORCH_DISTRIBUTED_DEBUG=DETAIL wraps the backend in `_ProcessGroupWrapper`, which
does not report `supports_coalescing`, so `batch_isend_irecv` issues its ops one at a time in list
order. Each rank here runs the P2P calls `forward_backward_pipelining_without_interleaving` makes
in one step (stage = rank; with `variable_seq_lengths` on, as ms-swift sets it, each call first
exchanges shapes), with each call's op list in the order megatron-core 0.17.0 builds it, issued
that way, and waits for them as `_communicate` does. At the first steady-state exchange both
neighbours SEND before they RECV on one communicator's stream: a send larger than the transport
buffers blocks until the peer's receive runs, which is queued behind the peer's own send.

Fixes: `coalesced` (the real batch_isend_irecv, DETAIL still set: coalesces on torch >= 2.11),
`detail-off` (the same without DETAIL), `evenodd` (megatron's `_p2p_ops` order, what
batch_p2p_comm=False uses), `eager` (device_id; expected NOT to help: docs/findings.md §4).
"""

from __future__ import annotations

from auditor.analysis.waitfor.model import Group, Op
from auditor.analysis.waitfor.sizes import MiB, size_words
from auditor.dynamic.backends import backend
from auditor.errors import InputError
from auditor.repro.plan import ISSUE_BATCH, ISSUE_ONE_BY_ONE, NET_ENV, ReproPlan, Spec

NAME = "fallback-1f1b"
FIXES = ("coalesced", "detail-off", "evenodd", "eager")
DEFAULT_SIZE = 32 * MiB  # docs/findings.md §4: 4096 x 1 x 2048 fp32 activations
SHAPE_BYTES = 24  # _communicate_shapes sends a 3-element int64 tensor

# Op list orders in megatron-core 0.17.0's megatron/core/pipeline_parallel/p2p_communication.py
# (tests/repro/test_repro.py checks them against the real wheel).
BATCHED_ORDER = ("send_prev", "recv_prev", "send_next", "recv_next")  # _batched_p2p_ops, shapes
EVEN_ORDER = ("send_next", "recv_prev", "send_prev", "recv_next")  # _p2p_ops, even stage
ODD_ORDER = ("recv_prev", "send_next", "recv_next", "send_prev")  # _p2p_ops, odd stage


def schedule(stage: int, stages: int, microbatches: int) -> list[tuple[str, frozenset[str]]]:
    """The P2PCommunicator calls one 1F1B step makes on `stage`, with the tensors each moves
    (megatron-core 0.17.0 schedules.py, forward_backward_pipelining_without_interleaving)."""
    first, last = stage == 0, stage == stages - 1
    warmup = min(stages - stage - 1, microbatches)
    calls: list[tuple[str, frozenset[str]]] = []

    def call(name: str, *slots: str, skip: bool) -> None:
        if not skip:
            calls.append((name, frozenset(slots)))

    for _ in range(warmup):
        call("recv_forward", "recv_prev", skip=first)
        call("send_forward", "send_next", skip=last)
    remaining = microbatches - warmup
    if remaining > 0:
        call("recv_forward", "recv_prev", skip=first)
    for i in range(remaining):
        call("send_forward_recv_backward", "send_next", "recv_next", skip=last)
        if i == remaining - 1:
            call("send_backward", "send_prev", skip=first)
        else:
            call("send_backward_recv_forward", "send_prev", "recv_prev", skip=first)
    for _ in range(warmup):
        call("recv_backward", "recv_next", skip=last)
        call("send_backward", "send_prev", skip=first)
    return calls


def programs(stages: int, microbatches: int, nbytes: int, order: str = "batched",
             shapes: bool = True) -> dict[int, list[Op]]:
    """Per-stage programs: each call's shape exchange (a batch), then its tensors (a batch in
    `_batched_p2p_ops` order, or unbatched in `_p2p_ops` even/odd order), each waited for."""
    group = Group(tuple(range(stages)), "default_pg")
    result: dict[int, list[Op]] = {}
    for stage in range(stages):
        ops: list[Op] = []
        done: tuple[int, ...] = ()
        batch = 0
        for name, slots in schedule(stage, stages, microbatches):
            exchanges = []
            if shapes:
                exchanges.append((BATCHED_ORDER, SHAPE_BYTES, True, f"{name} (shapes)"))
            if order == "batched":
                exchanges.append((BATCHED_ORDER, nbytes, True, name))
            else:
                exchanges.append((EVEN_ORDER if stage % 2 == 0 else ODD_ORDER, nbytes, False, name))
            for slot_order, size, batched, caller in exchanges:
                issued: list[int] = []
                for slot in (s for s in slot_order if s in slots):
                    kind, side = slot.split("_")
                    peer = stage - 1 if side == "prev" else stage + 1
                    ops.append(Op(stage, len(ops), "i" + kind, group, peer, size,
                                  batch=batch if batched else None, after=done if not issued else (),
                                  call=caller))
                    issued.append(len(ops) - 1)
                batch += batched
                done = tuple(issued)  # _communicate waits for every request before returning
        result[stage] = ops
    return result


def plan(spec: Spec) -> ReproPlan:
    if spec.nproc < 2:
        raise InputError("--nproc", f"{NAME} needs at least 2 pipeline stages, not {spec.nproc}")
    runs = backend(spec.backend)
    if not runs.runs_nccl and spec.transport is not None:
        raise InputError("--transport", "the transport is NCCL's choice; gloo always uses TCP")
    nbytes = DEFAULT_SIZE if spec.size is None else spec.size
    if nbytes <= 0:
        raise InputError("--size", f"must be a positive number of bytes, not {nbytes}")
    microbatches = spec.microbatches or max(4, spec.nproc)
    if microbatches < spec.nproc:
        raise InputError("--microbatches", f"1F1B needs at least as many micro-batches as stages "
                         f"({spec.nproc}) to reach its steady state")
    order = "evenodd" if spec.fix == "evenodd" else "batched"
    issue = ISSUE_BATCH if spec.fix in ("coalesced", "detail-off") else ISSUE_ONE_BY_ONE
    init = "eager" if spec.fix == "eager" else "lazy"
    transport = spec.transport or "nvlink"
    env = {} if spec.fix == "detail-off" else {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
    if runs.runs_nccl and transport.startswith("net"):
        env.update(NET_ENV)
    how = {None: "batches issued op by op (torch 2.10 + DETAIL)",
           "coalesced": "batches to batch_isend_irecv under DETAIL",
           "detail-off": "batches to batch_isend_irecv, DETAIL off",
           "evenodd": "even/odd order op by op", "eager": "batches op by op, eager init"}[spec.fix]
    where = f"{spec.backend}" + (f" {transport}" if runs.runs_nccl else "")
    shapes = spec.variable_seq_lengths is not False
    note = ""
    if not runs.stream_order:
        note = ("gloo has no streams, no lazy communicators and no coalescing: each op here waits "
                "for the previous one on its NCCL communicator to emulate stream order, and gloo "
                "buffers no send, so the ordering hang shows at any --size (the 24-byte shape "
                "exchanges too: --variable-seq-lengths false leaves them out); the size and "
                "transport threshold needs NCCL")
    return ReproPlan(programs(spec.nproc, microbatches, nbytes, order, shapes), issue, init,
                title=(f"{NAME}, {spec.nproc} stages x {microbatches} micro-batches, "
                       f"{size_words(nbytes)}{'' if shapes else ', no shape exchange'}, {where}, {how}"),
                env=env, unset=("TORCH_DISTRIBUTED_DEBUG",) if spec.fix == "detail-off" else (),
                emulate_streams=not runs.stream_order, note=note, backend=spec.backend,
                transport=transport)
