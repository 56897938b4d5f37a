"""What a torch.distributed backend does with point-to-point ops, in one place: the join, the
reproducers and doctor ask a `Backend` what it can do instead of comparing its name. NCCL is the
backend the audit is about; gloo is the one a CPU run gets (a recording on a laptop, a
reproducer or doctor without GPUs), and differs from NCCL in every field (docs/findings.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Backend:
    name: str
    device: str  # where a rank's tensors live: "cuda" (one GPU per rank) or "cpu"
    # A pair's first P2P op creates their communicator (NCCL, unless init is eager); gloo
    # connects every pair when a group is made.
    lazy_communicators: bool
    coalesces: bool  # batch_isend_irecv can run a batch as one group (gloo: op by op)
    stream_order: bool  # a communicator's ops run in issue order on one stream (gloo: no streams)
    # NCCL runs the ops: its transports (P2P, SHM, NET), their buffering bounds and its
    # NCCL_DEBUG=INFO log apply (gloo: TCP, which buffers no send).
    runs_nccl: bool


NCCL = Backend("nccl", "cuda", lazy_communicators=True, coalesces=True, stream_order=True,
               runs_nccl=True)
GLOO = Backend("gloo", "cpu", lazy_communicators=False, coalesces=False, stream_order=False,
               runs_nccl=False)
BACKENDS = {b.name: b for b in (NCCL, GLOO)}


def backend(name: str) -> Backend:
    """The model of a backend named as `--backend` and the replay's conditions name it."""
    return BACKENDS[name]


def default() -> Backend:
    """The backend a local run gets when none is asked for: NCCL where CUDA is available."""
    import torch

    return NCCL if torch.cuda.is_available() else GLOO


def chosen(name: str | None) -> Backend:
    """The backend a command runs on: the one `--backend` names, else the local default."""
    return backend(name) if name else default()


def of_groups(groups: Iterable[dict[str, Any]]) -> Backend:
    """What a recorded run ran on, from its group lines: gloo where groups were recorded and
    none is NCCL's; else NCCL (the backend the questions are about, where the trace is silent)."""
    groups = list(groups)
    return GLOO if groups and not any(g.get("backend") == "nccl" for g in groups) else NCCL
