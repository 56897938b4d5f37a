"""The replay's parts on their own: the wait-for graph's cycle search, the count mismatches read
from a finished replay, and the answer's records (auditor.analysis.waitfor.graph, .counts, .result)."""

from __future__ import annotations

from auditor.analysis.waitfor.counts import count_mismatches
from auditor.analysis.waitfor.graph import edge_json, find_cycle
from auditor.analysis.waitfor.model import Conditions, Group, Op, communicator_for
from auditor.analysis.waitfor.replay import analyze

PAIR = Group((0, 1), "pp")


def test_the_cycle_is_found_from_the_first_blocked_node_and_a_chain_has_none():
    cpu0, cpu1, op = ("cpu", 0), ("cpu", 1), ("op", 1, 0)
    assert find_cycle({cpu0: [(op, "waits for")], op: [(cpu1, "match")], cpu1: [(cpu0, "join")]}) \
        == [cpu0, op, cpu1]
    assert find_cycle({cpu0: [(op, "waits for")], op: [(None, "never issued")]}) == []


def test_an_edge_to_a_cpu_names_no_op_and_an_edge_to_nothing_no_rank():
    assert edge_json(("cpu", 3), "join") == {"rank": 3, "index": None, "reason": "join"}
    assert edge_json(("op", 1, 4), "match") == {"rank": 1, "index": 4, "reason": "match"}
    assert edge_json(None, "no matching RECV") == {"rank": None, "index": None,
                                                   "reason": "no matching RECV"}


def test_two_sends_against_one_receive_are_one_count_mismatch_in_the_sender_s_direction():
    """Rank 0 sends rank 1 twice in one step; rank 1 receives once and ends: the second send,
    larger than any transport buffers, waits forever for a RECV rank 1 never posts."""
    big = 1 << 30
    programs = {0: [Op(0, 0, "isend", PAIR, 1, big, batch=1, where="a.py:1"),
                    Op(0, 1, "isend", PAIR, 1, big, batch=1, where="a.py:2")],
                1: [Op(1, 0, "irecv", PAIR, 0, big, batch=2, where="b.py:9")]}
    conditions = Conditions.for_transport("net", coalesce=False)
    analysis = analyze(programs, conditions)
    assert analysis.hang
    ops = {(op.rank, op.index): op for ops in programs.values() for op in ops}
    comm = {key: communicator_for(op, conditions, False) for key, op in ops.items()}
    entries = {rank: [((rank, op.index),) for op in program] for rank, program in programs.items()}
    counts = count_mismatches(ops, comm, entries, done={(0, 0), (1, 0)})
    assert [(c["src"], c["dst"], c["sends"], c["recvs"], c["send_site"], c["recv_site"])
            for c in counts] == [(0, 1, 2, 1, "a.py:2", "b.py:9")]
    assert analysis.count_mismatches == counts  # the replay's answer is this function's
    assert analysis.to_json()["count_mismatches"] == counts


def test_nothing_left_waiting_is_no_count_mismatch():
    programs = {0: [Op(0, 0, "isend", PAIR, 1, 16)], 1: [Op(1, 0, "irecv", PAIR, 0, 16)]}
    conditions = Conditions.for_transport("net")
    ops = {(r, 0): p[0] for r, p in programs.items()}
    comm = {key: communicator_for(op, conditions, True) for key, op in ops.items()}
    assert count_mismatches(ops, comm, {0: [((0, 0),)], 1: [((1, 0),)]}, set(ops)) == []
    assert not analyze(programs, conditions).hang
