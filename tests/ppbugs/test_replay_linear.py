"""The replay's work grows linearly with the ops (issue 28 item 12): `report` on a 2-rank
recording of N blocking send/recv pairs called `_progress` N^2 times (16M at 4,000 ops), since
every pass re-walked every stream while each pass issued one op per rank."""

from __future__ import annotations

from auditor.analysis.waitfor import replay
from auditor.analysis.waitfor.model import Conditions, Group, Op

PAIR = Group((0, 1), "pp")


def ping_pong(pairs: int) -> dict[int, list[Op]]:
    """Rank 0 sends then receives, rank 1 receives then sends, each op blocking (each waits for
    every earlier op of its rank), as a recording of torch.distributed.send/recv reads."""
    programs: dict[int, list[Op]] = {0: [], 1: []}
    for rank in (0, 1):
        for i in range(2 * pairs):
            send = (i % 2 == 0) == (rank == 0)
            programs[rank].append(Op(rank, i, "send" if send else "recv", PAIR, 1 - rank, 16,
                                     after=(i - 1,) if i else ()))
    return programs


def progress_calls(programs: dict[int, list[Op]], conditions: Conditions, monkeypatch) -> int:
    calls = 0
    original = replay._Replay._progress

    def counted(self, stream):
        nonlocal calls
        calls += 1
        return original(self, stream)

    monkeypatch.setattr(replay._Replay, "_progress", counted)
    analysis = replay.analyze(programs, conditions)
    monkeypatch.undo()
    assert not analysis.hang
    return calls


def test_progress_calls_grow_linearly_with_the_ops(monkeypatch):
    for conditions in (Conditions.gloo(), Conditions.for_transport("net")):
        small = progress_calls(ping_pong(500), conditions, monkeypatch)
        large = progress_calls(ping_pong(2000), conditions, monkeypatch)
        # 4x the ops: at most about 4x the work (quadratic was 16x).
        assert large <= 5 * small, (conditions.backend, small, large)
        assert large <= 8 * 2 * 2 * 2000, (conditions.backend, large)
