"""NCCL group semantics in the replay (issue 23, item 1): a coalesced batch_isend_irecv is one
NCCL group that completes only when all its ops complete (MUST's AND semantics), and a gloo
recording is replayed under NCCL as torch would issue it there (rules/torch.toml decides
whether batch_isend_irecv coalesces), not op by op as gloo ran it."""

from __future__ import annotations

from auditor.analysis.runreplay import nccl_coalesces
from auditor.analysis.waitfor.model import Conditions, Group, Op
from auditor.analysis.waitfor.replay import analyze

WORLD = Group((0, 1, 2), "default_pg")
PAIR = Group((1, 2), "pp12")


def op(rank, index, api, peer, group=WORLD, **kw):
    return Op(rank, index, api, group, peer, 16, **kw)


def skip_connection() -> dict[int, list[Op]]:
    """PiPPy #969's shape (https://github.com/pytorch/PiPPy/issues/969): rank 2 receives from
    stage 0 (a skip connection) and from stage 1 in one batch_isend_irecv, waits for the first
    receive only, then sends to rank 1 on another group; rank 1 sends to rank 2 only after
    receiving that. Every op comes from a batch_isend_irecv (torch pipelining's _batch_p2p)."""
    return {
        0: [op(0, 0, "isend", 2, batch=1)],
        1: [op(1, 0, "irecv", 2, PAIR, batch=1), op(1, 1, "isend", 2, batch=2, after=(0,))],
        2: [op(2, 0, "irecv", 0, batch=7), op(2, 1, "irecv", 1, batch=7),
            op(2, 2, "isend", 1, PAIR, batch=8, after=(0,))],
    }


def test_a_coalesced_group_completes_only_with_all_its_ops():
    programs = skip_connection()
    # gloo ran each op by itself: the first receive's wait returned, and the run completed.
    assert not analyze(programs, Conditions.gloo()).hang
    # Under NCCL the batch is one group: its first receive completes only with its second,
    # which waits for rank 1, which waits for the send rank 2 issues after the first.
    nccl = analyze(programs, Conditions.for_transport("net", init="eager", coalesce=True))
    assert nccl.hang
    assert "one NCCL group" in nccl.cycle
    assert "rank 2's IRECV from 0" in nccl.cycle and "rank 1's IRECV from 2" in nccl.cycle
    # Per-peer batches, the second receive posted after the send (PiPPy PR #1000): no hang.
    fixed = {**programs, 2: [op(2, 0, "irecv", 0, batch=7),
                             op(2, 1, "isend", 1, PAIR, batch=8, after=(0,)),
                             op(2, 2, "irecv", 1, batch=9)]}
    assert not analyze(fixed, Conditions.for_transport("net", init="eager", coalesce=True)).hang


def test_torch_rules_decide_coalescing_on_nccl():
    # ProcessGroupNCCL supports coalescing; the DETAIL wrapper forwards it since 2.11 only.
    assert nccl_coalesces("2.13.0", None) is True
    assert nccl_coalesces("2.10.0", "OFF") is True
    assert nccl_coalesces("2.10.0", "DETAIL") is False
    assert nccl_coalesces("2.10.0", None) is None  # the debug level decides it: unknown
    assert nccl_coalesces(None, None) is None


def test_a_gloo_recording_is_asked_the_nccl_question_as_torch_would_issue_it():
    """tests/waitfor_cases/fallback-2-32mib: a gloo recording (torch 2.13.0) of the first 1F1B
    exchange in one batch_isend_irecv per rank, 32 MiB each way. gloo ran it op by op; on NCCL
    torch 2.13.0 coalesces it (docs/findings.md §4: the coalesced path completes), so the
    NCCL verdicts are those of the coalesced order, whatever `report --transport` carried."""
    from pathlib import Path

    from auditor.analysis.runreplay import recorded_order
    from auditor.dynamic.trace import read_trace_dir

    trace = read_trace_dir(Path(__file__).parent.parent / "waitfor_cases" / "fallback-2-32mib")
    order = recorded_order(trace, {"sites": []})
    assert order.nccl_coalesce is True
    verdict = order.deadlock(Conditions.for_transport("net", coalesce=False))
    assert verdict.can is False and verdict.will is False
