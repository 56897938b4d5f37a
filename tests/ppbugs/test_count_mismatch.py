"""Counts, not only cycles (issue 23, item 2): where one rank posts more receives from a peer
than the peer sends it before moving on (or ending), the replay reports a per-peer count
mismatch with both source lines, besides the wait-for cycle it causes."""

from __future__ import annotations

import pytest
from auditor.analysis.waitfor.model import Conditions, Group, Op
from auditor.analysis.waitfor.replay import analyze

PAIR = Group((0, 1), "pp")


def blocking(rank: int, steps: list[tuple[str, int, str]]) -> list[Op]:
    return [Op(rank, i, api, PAIR, peer, 512, after=tuple(range(i)), where=where)
            for i, (api, peer, where) in enumerate(steps)]


def microbatch_disagreement() -> dict[int, list[Op]]:
    """torchtitan #775's shape (https://github.com/pytorch/torchtitan/issues/775, fixed by
    torchtitan PR #781): stage 0 runs 2 microbatches, stage 1 computes 4, in GPipe order
    (torch/distributed/pipelining/schedules.py ScheduleGPipe, torch 2.13.0)."""
    # As recorded: rank 1 stopped in its third receive, rank 0 in its first gradient receive.
    return {0: blocking(0, [("send", 1, "stage0.py:10")] * 2 + [("recv", 1, "stage0.py:12")]),
            1: blocking(1, [("recv", 0, "stage1.py:20")] * 3)}


def test_more_receives_than_sends_is_a_count_mismatch_with_both_lines():
    analysis = analyze(microbatch_disagreement(), Conditions.gloo())
    assert analysis.hang
    [count] = analysis.count_mismatches
    assert (count["src"], count["dst"], count["sends"], count["recvs"]) == (0, 1, 2, 3)
    assert count["send_site"] == "stage0.py:10" and count["recv_site"] == "stage1.py:20"
    assert "rank 1 posts 3 RECV(s) from 0" in count["words"]


def test_equal_counts_and_a_peer_not_yet_there_are_no_count_mismatch():
    fixed = {0: blocking(0, [("send", 1, "a:1")] * 2 + [("recv", 1, "a:2")] * 2),
             1: blocking(1, [("recv", 0, "b:1")] * 2 + [("send", 0, "b:2")] * 2)}
    assert analyze(fixed, Conditions.gloo()).count_mismatches == []
    # Rank 1 waits for a send rank 0 has not reached: rank 0 is stuck elsewhere (on rank 2).
    trio = Group((0, 1, 2), "pp")
    waiting = {0: [Op(0, 0, "recv", trio, 2, 4)], 1: [Op(1, 0, "recv", trio, 0, 4)],
               2: [Op(2, 0, "recv", trio, 1, 4)]}
    assert analyze(waiting, Conditions.gloo()).count_mismatches == []


def test_a_wait_recorded_on_another_peers_op_still_ends_the_step():
    """benchmarks/ppbugs/cases/megatron-lm-5240 (batched side), as gloo records it: 3 ranks in a
    ring, two batch_isend_irecv calls each, the wait between them recorded only on the second
    batch's first op (whose peer is the other neighbour). The replay under NCCL op by op hangs
    (lazy pair communicators), but no exchange miscounts: no count mismatch."""
    ring = Group((0, 1, 2), "default_pg")
    programs = {}
    for r in range(3):
        prev, nxt = (r - 1) % 3, (r + 1) % 3
        programs[r] = [Op(r, 0, "irecv", ring, prev, 4096, batch=1, where="driver.py:39"),
                       Op(r, 1, "isend", ring, nxt, 4096, batch=1, where="driver.py:39"),
                       Op(r, 2, "irecv", ring, nxt, 4096, batch=2, after=(0, 1), where="driver.py:42"),
                       Op(r, 3, "isend", ring, prev, 4096, batch=2, where="driver.py:42")]
    analysis = analyze(programs, Conditions.for_transport("net", coalesce=False))
    assert analysis.hang and analysis.count_mismatches == []


@pytest.mark.heavy
def test_a_real_gpipe_run_whose_stages_disagree_on_microbatches(tmp_path):
    """tests/ppbugs/drivers/gpipe_microbatches.py: torch 2.13.0's ScheduleGPipe, stage 0 with 2
    microbatches, stage 1 with 4 (torchtitan #775), recorded on gloo until it hangs. The report
    names the count, with the lines of both sides, besides the cycle."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    from auditor.analysis.join import join
    from auditor.dynamic.trace import read_trace_dir

    driver = Path(__file__).parent / "drivers" / "gpipe_microbatches.py"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run([sys.executable, "-m", "auditor", "record", "--out", str(tmp_path / "t"),
                    "--hang-after", "3", "--", sys.executable, "-m", "torch.distributed.run",
                    "--nproc_per_node", "2", "--master_port", str(port), str(driver)],
                   env=dict(os.environ, GLOO_TIMEOUT="8"), capture_output=True, timeout=120,
                   check=False, cwd=Path(__file__).resolve().parents[2])
    joined = join({"sites": [], "targets": [], "findings": [], "config": {}}, read_trace_dir(tmp_path / "t"))
    [count] = joined["run"]["waitfor"]["count_mismatches"]
    assert (count["src"], count["dst"], count["sends"], count["recvs"]) == (0, 1, 2, 3)
    assert count["send_site"].startswith("gpipe_microbatches.py:")
    assert count["recv_site"].startswith("gpipe_microbatches.py:")
    kinds = [f["kind"] for f in joined["findings"]]
    assert "p2p-count-mismatch" in kinds and "wait-for-cycle" in kinds
