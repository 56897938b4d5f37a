"""lazy-init: each rank's first P2P op mixes batched and unbatched under lazy NCCL init (docs/findings.md §1).

Rank 0 hands `isend(x, 1)` to batch_isend_irecv, which coalesces and so needs the whole group's
communicator; every other rank r first calls `recv(x, r-1)`, unbatched, which under lazy init
needs its pair's own 2-rank communicator. Each creation is a blocking rendezvous, so every rank
waits inside a different one. Rank 0, the root of the group's communicator, waits in
ncclCommInitRank, which nothing bounds; the others wait in the store for their pair's unique id,
bounded only by the store timeout (`--pg-timeout`; ms-swift's 18,000,000 s by default here).
Ranks then pass the tensor down the chain, so a run that gets past the first ops completes.

Fixes: `coalesced` (every op batched: all ranks meet in the group communicator's creation),
`unbatched` (every op unbatched: pairs meet in their own), `eager` (device_id: one communicator,
created at init).
"""

from __future__ import annotations

from auditor.analysis.waitfor.model import Group, Op
from auditor.dynamic.backends import backend
from auditor.errors import InputError
from auditor.repro.plan import ISSUE_BATCH, ReproPlan, Spec

NAME = "lazy-init"
FIXES = ("coalesced", "unbatched", "eager")
TENSOR_BYTES = 16  # docs/findings.md §1: one 4-element float32 tensor


def plan(spec: Spec) -> ReproPlan:
    if spec.nproc < 2:
        raise InputError("--nproc", f"{NAME} needs at least 2 ranks, not {spec.nproc}")
    if spec.size is not None or spec.microbatches is not None \
            or spec.variable_seq_lengths is not None:
        raise InputError("--size/--microbatches/--variable-seq-lengths", f"{NAME} sends one "
                         "4-element tensor; these options are for fallback-1f1b")
    if spec.transport is not None:
        raise InputError("--transport", f"{NAME} hangs before any data moves; the transport "
                         "does not matter (it is for fallback-1f1b)")
    if not backend(spec.backend).lazy_communicators and spec.fix == "eager":
        raise InputError("--fix eager", "eager init is NCCL's (device_id); gloo connects every "
                         "pair when a group is created")
    group = Group(tuple(range(spec.nproc)), "default_pg")
    programs = {rank: _program(rank, spec.nproc, group, spec.fix) for rank in range(spec.nproc)}
    first = {None: "rank 0 batched, others unbatched", "coalesced": "all batched",
             "unbatched": "all unbatched", "eager": "rank 0 batched, others unbatched"}[spec.fix]
    init = "eager" if spec.fix == "eager" else "lazy"
    note = ""
    if not backend(spec.backend).lazy_communicators:
        note = ("gloo creates no communicator lazily (it connects every pair when a group is "
                "made) and never coalesces, so this case cannot hang on gloo: the run checks the "
                "op sequence only; the hang needs --backend nccl, one GPU per rank")
    return ReproPlan(programs, ISSUE_BATCH, init,
                title=f"{NAME}, {spec.nproc} ranks, {spec.backend}, {init} init, first ops {first}",
                unset=("TORCH_DISTRIBUTED_DEBUG",),  # so the batch coalesces on every torch
                note=note, backend=spec.backend)


def _program(rank: int, world: int, group: Group, fix: str | None) -> list[Op]:
    batched = fix == "coalesced"
    if rank == 0:
        if fix == "unbatched":
            return [Op(0, 0, "send", group, 1, TENSOR_BYTES, call="dist.send")]
        return [Op(0, 0, "isend", group, 1, TENSOR_BYTES, batch=0, call="batch_isend_irecv")]
    ops = [Op(rank, 0, "irecv" if batched else "recv", group, rank - 1, TENSOR_BYTES,
              batch=0 if batched else None, call="batch_isend_irecv" if batched else "dist.recv")]
    if rank + 1 < world:
        ops.append(Op(rank, 1, "isend" if batched else "send", group, rank + 1, TENSOR_BYTES,
                      batch=1 if batched else None, after=(0,),
                      call="batch_isend_irecv" if batched else "dist.send"))
    return ops
