"""The report names the cause, and the rank that failed, before their symptoms (analysis.peerend,
runevidence, verdict).

Real gloo runs these traces reproduce (torch 2.13.0+cpu, recorded with `p2paudit record`):
- DeepSpeed 0.19.8's PipelineEngine, 2 stages (deepspeed/runtime/pipe/engine.py): the second
  batch's micro-batches grow from (1, 8) to (2, 8); rank 0 sends 64 B (engine.py:1043,
  `_exec_send_activations`), rank 1 receives 32 B (engine.py:1127, `_exec_recv_activations`) and
  aborts inside gloo ("op.preamble.length <= op.nbytes. 64 vs 32", exit -6, no end record);
  rank 0 then raises "Connection reset by peer". The report said CRASHED on rank 0.
- torch's Schedule1F1B (torch/distributed/pipelining/schedules.py) with rank 1 killed -9
  between steps: rank 0's isend raises "Connection reset by peer"; torchrun names rank 1
  (SIGKILL) as the root cause, the report named rank 0.
- two ranks, rank 1 posting one receive where rank 0 sends two: the report led with "HANG: ...
  2 rank(s) inside an op", the count mismatch second.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from auditor import cli
from auditor.errors import EXIT_FINDINGS

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "schema" / "scan-document.schema.json").read_text())

GROUP = {"ranks": [0, 1], "size": 2, "desc": "default_pg", "name": "0", "backend": "gloo",
         "eager": False}
RESET = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] "
         "Read error [127.0.0.1]:54454: Connection reset by peer. This is typically caused by a "
         "remote worker hanging or bugs in the application. Check the logs of the remote worker "
         "before reporting an error.")
COMM = "deepspeed/comm/torch.py"
ENGINE = "deepspeed/runtime/pipe/engine.py"


class Rank:
    """One rank's file, line by line, as the recorder writes it."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.lines: list[dict[str, Any]] = [
            {"seq": 0, "t": 0.0, "rank": rank, "api": "process", "phase": "meta", "pid": 10 + rank,
             "host": "h", "argv": ["train.py"], "python": "3.11", "torch": "2.13.0+cpu",
             "recorder": "p2paudit 0", "hang_after": 20.0, "mono0": 1.0, "wall0": 1000.0,
             "world_size": 2},
            {"seq": 1, "t": 0.1, "rank": rank, "api": "group", "phase": "group", "group": GROUP}]

    def add(self, t: float, **fields: Any) -> int:
        seq = len(self.lines)
        self.lines.append({"seq": seq, "t": t, "rank": self.rank, **fields})
        return seq

    def op(self, t: float, api: str, peer: int, at: str, shape: list[int], chosen: str | None = None,
           end: str | None = "return", error: str | None = None, end_t: float | None = None) -> None:
        path, line = at.rsplit(":", 1)
        start = self.add(t, api=api, phase="start", kind="p2p", batched=False, peer=peer, group="0",
                         site={"path": path, "line": int(line), "end_line": int(line), "function": "f"},
                         shape=shape, dtype="float32",
                         **({"chosen": {"path": chosen.rsplit(":", 1)[0], "line": int(chosen.rsplit(":", 1)[1]),
                                        "end_line": int(chosen.rsplit(":", 1)[1]), "function": "g"}}
                            if chosen else {}))
        if end is not None:
            self.add(end_t if end_t is not None else t + 0.01, api=api, phase="end", of=start, how=end,
                     **({"error": error} if error else {}))

    def crash(self, t: float, error: str, at: str, raised: str | None = None,
              chain: list[str] | None = None) -> None:
        def site(where: str) -> dict[str, Any]:
            return {"path": where.rsplit(":", 1)[0], "line": int(where.rsplit(":", 1)[1]), "function": "f"}
        links = {} if chain is None else {"chain": [{"type": e.split(":")[0], "error": e} for e in chain]}
        self.add(t, api="process", phase="exception", error=error, type=error.split(":")[0],
                 thread="MainThread", main=True, at=site(at), **({"raised": site(raised)} if raised else {}),
                 **links)
        self.add(t + 0.01, api="process", phase="exit", how="exception", status=1)

    def signal(self, t: float, name: str = "SIGTERM") -> None:
        self.add(t, api="process", phase="exit", how="signal", signal=name)

    def write(self, root: Path, killed: bool = False) -> None:
        text = "".join(json.dumps(x) + "\n" for x in self.lines).encode()
        # a killed recorder leaves the zeros of its mapped file after its last line
        (root / f"rank-{self.rank}.jsonl").write_bytes(text + (b"\0" * 256 if killed else b""))


def report(tmp_path: Path, *ranks: tuple[Rank, bool]) -> tuple[int, dict[str, Any]]:
    root = tmp_path / "trace"
    root.mkdir(parents=True)
    for rank, killed in ranks:
        rank.write(root, killed)
    out = tmp_path / "r.json"
    code = cli.main(["report", "--trace", str(root), "--format", "json", "-o", str(out)])
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    return code, doc


def finding(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    (found,) = [f for f in doc["findings"] if f["kind"] == kind]
    return found


def test_a_size_mismatch_leads_the_abort_and_the_reset_it_caused(tmp_path: Path) -> None:
    """DeepSpeed's growing micro-batch: the mismatch is the cause, rank 1's end (no exit record,
    inside the receive) and rank 0's "Connection reset by peer" follow from it."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "send", 1, f"{COMM}:472", [2, 8], chosen=f"{ENGINE}:1043")
    zero.op(1.1, "recv", 1, f"{COMM}:477", [1, 8], chosen=f"{ENGINE}:1209", end="raise", error=RESET,
            end_t=1.3)
    zero.crash(1.31, RESET, f"{COMM}:477", raised="auditor/dynamic/hooks.py:349")
    one.op(1.05, "recv", 0, f"{COMM}:477", [1, 8], chosen=f"{ENGINE}:1127", end=None)
    code, doc = report(tmp_path, (zero, False), (one, True))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert head.startswith("CRASHED: 1 send/receive pair(s) disagree in size: rank 0's send of 64 B "
                           f"float32 at {COMM}:472 (chosen at {ENGINE}:1043) is received by rank 1's "
                           f"recv of 32 B"), head
    assert ("; then rank 1 ended first, without an exit record (killed, or ended past Python's exit "
            f"handlers: os._exit, an abort) in recv with rank 0 ({COMM}:477); rank 0 then raised RuntimeError: "
            "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
            f"[127.0.0.1]:54454: Connection reset by peer in recv with rank 1 at {COMM}:477 "
            "(a consequence).") in head, head
    assert "left waiting" not in head  # rank 1 ended inside its receive: it waits on nothing
    cause = doc["verdict"]["causes"][0]
    assert cause["kind"] == "p2p-mismatch" and cause["fix"].startswith("give both sides the same shape")
    assert {"rank-file-not-closed", "run-crashed", "run-op-raised"} <= set(cause["consequences"])
    # the recorder's own frame (hooks.py's wait) is no line of the program
    assert "hooks.py" not in finding(doc, "run-crashed")["fix"]


def test_a_killed_peer_is_the_cause_of_the_reset_its_partner_raised(tmp_path: Path) -> None:
    """Schedule1F1B with rank 1 killed -9 between steps: rank 1's end leads, rank 0's error is its
    consequence; no mismatch between them."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "irecv", 1, "pipe_slow.py:11", [2, 16], end="wait")
    zero.op(2.0, "isend", 1, "pipe_slow.py:11", [2, 16], end="raise", error=RESET, end_t=2.1)
    zero.crash(2.11, RESET, "pipe_slow.py:11", raised="auditor/dynamic/hooks.py:351")
    one.op(1.0, "isend", 0, "pipe_slow.py:12", [2, 16], end="wait")
    code, doc = report(tmp_path, (zero, False), (one, True))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert head == ("CRASHED: rank 1 ended first, without an exit record (killed, or ended "
                    "past Python's exit handlers: os._exit, an abort), outside any op; rank 0 then raised RuntimeError: "
                    "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
                    "[127.0.0.1]:54454: Connection reset by peer in isend with rank 1 at "
                    "pipe_slow.py:11 (a consequence)."), head
    (cause,) = doc["verdict"]["causes"]
    assert cause["kind"] == "rank-file-not-closed"
    assert set(cause["consequences"]) == {"run-crashed", "run-op-raised"}
    assert cause["fix"].startswith("rank 1's end is the cause: its stderr")
    assert "torchrun's \"Root Cause\"" in cause["fix"]


def test_a_peer_ended_by_a_signal_before_the_reset_leads_it(tmp_path: Path) -> None:
    """The same, rank 1 ended by SIGTERM (its exit line) before rank 0's isend raised; a SIGTERM
    after the error (the launcher ending the rest) keeps the crash in front."""
    def ranks(signal_t: float) -> tuple[tuple[Rank, bool], tuple[Rank, bool]]:
        zero, one = Rank(0), Rank(1)
        zero.op(2.0, "isend", 1, "pipe_slow.py:11", [2, 16], end="raise", error=RESET, end_t=2.1)
        zero.crash(2.11, RESET, "pipe_slow.py:11")
        one.op(1.0, "isend", 0, "pipe_slow.py:12", [2, 16], end="wait")
        one.signal(signal_t)
        return (zero, False), (one, False)

    code, doc = report(tmp_path / "before", *ranks(2.05))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS and head.startswith("CRASHED: rank 1 ended first, by SIGTERM, outside "
                                                     "any op; rank 0 then raised"), head
    (cause,) = doc["verdict"]["causes"]
    assert cause["kind"] == "rank-ended-by-signal" and "run-crashed" in cause["consequences"]
    assert cause["fix"].startswith("rank 1's end is the cause: find who sent SIGTERM to rank 1 first")
    code, doc = report(tmp_path / "after", *ranks(2.5))
    head = doc["verdict"]["headline"]
    assert head.startswith("CRASHED: rank 0 raised RuntimeError:") and \
        head.endswith("rank(s) 1 then ended by SIGTERM (a consequence)."), head
    assert doc["verdict"]["causes"][0]["kind"] == "run-crashed"


def test_a_cycle_leads_the_hang_and_a_cut_count_is_beside_it(tmp_path: Path) -> None:
    """Rank 1 posts one receive where rank 0 sends two (skip.py: `dist.send(a, 1); dist.send(a,
    1); dist.recv(a, 1)` against `dist.recv(a, 0); dist.send(a, 0)`), both ended by the
    `timeout -s TERM` around the run: the wait-for cycle is what the stopped ranks waited on and
    leads (review r42-cause, item 1); the phase count is listed beside it, explaining nothing."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "send", 1, "skip.py:6", [4])
    zero.op(1.1, "send", 1, "skip.py:6", [4], end=None)
    zero.signal(30.0)
    one.op(1.0, "recv", 0, "skip.py:8", [4])
    one.op(1.1, "send", 0, "skip.py:11", [4], end=None)
    one.signal(30.0)
    code, doc = report(tmp_path, (zero, False), (one, False))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert head.startswith("HANG: the recorded run stopped with 2 rank(s) inside an op that never "
                           "completed, and its recorded op order deadlocks under gloo"), head
    assert head.count("stopped") == 1, head
    assert head.endswith(": a cycle. 1 other cause(s) below."), head
    cycle, count = doc["verdict"]["causes"]
    assert (cycle["kind"], cycle["consequences"]) == ("wait-for-cycle", ["run-stopped-in-op"])
    assert (count["kind"], count["consequences"]) == ("p2p-count-mismatch", [])


def test_a_count_mismatch_leads_a_peer_killed_inside_the_exchange(tmp_path: Path) -> None:
    """The same skipped receive, rank 1 then killed while it waits in its send: the count mismatch
    comes before its end and rank 0's reset."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "send", 1, "skip.py:6", [4])
    zero.op(1.1, "send", 1, "skip.py:6", [4], end="raise", error=RESET, end_t=9.0)
    zero.crash(9.01, RESET, "skip.py:6")
    one.op(1.0, "recv", 0, "skip.py:8", [4])
    one.op(1.1, "send", 0, "skip.py:11", [4], end=None)
    code, doc = report(tmp_path, (zero, False), (one, True))
    head = doc["verdict"]["headline"]
    assert head.startswith("CRASHED: in one exchange, rank 1 posts 1 RECV(s) from 0"), head
    assert "; then rank 1 ended first, without an exit record" in head and \
        "in send with rank 0 (skip.py:11)" in head, head
    cause = doc["verdict"]["causes"][0]
    assert cause["kind"] == "p2p-count-mismatch"
    assert {"rank-file-not-closed", "run-crashed"} <= set(cause["consequences"])


def test_a_rank_killed_between_ops_is_the_cause_of_the_count_it_cut(tmp_path: Path) -> None:
    """tests/record_fixtures/killed: rank 2 SIGKILLs itself after its first receive (outside any
    op); ranks 1 and 3 raise "Connection closed/reset by peer" in ops with it, and the exchange it
    left short reads as a count mismatch: its end is the cause of all of them."""
    fixture = Path(__file__).parents[1] / "record_fixtures" / "killed"
    out = tmp_path / "r.json"
    code = cli.main(["report", "--trace", str(fixture), "--format", "json", "-o", str(out)])
    doc = json.loads(out.read_text())
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert head.startswith("CRASHED: rank 2 ended first, without an exit record (killed, or ended "
                           "past Python's exit handlers: os._exit, an abort), outside any op; rank 1 then raised "
                           "RuntimeError:"), head
    assert "Connection closed by peer" in head and "rank 3 then raised" in head, head
    cause = doc["verdict"]["causes"][0]
    assert cause["kind"] == "rank-file-not-closed"
    assert {"run-op-raised", "run-stopped-in-op"} <= set(cause["consequences"])
    # The exchange rank 2's end cut is no count mismatch (review r42-cause, item 2).
    assert "p2p-count-mismatch" not in {f["kind"] for f in doc["findings"]}


FIXTURES = Path(__file__).parents[1] / "record_fixtures"


def _real(tmp_path: Path, name: str) -> dict[str, Any]:
    out = tmp_path / "r.json"
    assert cli.main(["report", "--trace", str(FIXTURES / name), "--format", "json", "-o", str(out)]) \
        == EXIT_FINDINGS
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_a_real_recv_recv_deadlock_is_a_cycle_not_a_count(tmp_path: Path) -> None:
    """tests/record_fixtures/recvrecv (recvrecv.py.txt, recorded on gloo, torch 2.x, then
    stopped): both ranks RECV first, then SEND. Each stopped in its receive before posting its
    send: the exchange is cut, not short, so no count mismatch; the cycle leads (review
    r42-cause, item 1)."""
    doc = _real(tmp_path, "recvrecv")
    head = doc["verdict"]["headline"]
    assert head.startswith("HANG: the recorded run stopped with 2 rank(s) inside an op that never "
                           "completed, and its recorded op order deadlocks"), head
    assert "rank 0's RECV from 1" in head, head
    assert "p2p-count-mismatch" not in {f["kind"] for f in doc["findings"]}
    assert doc["verdict"]["causes"][0]["kind"] == "wait-for-cycle"


def test_a_rank_killed_inside_the_exchange_leads_not_the_count_it_cut(tmp_path: Path) -> None:
    """tests/record_fixtures/killin9c (pipe.py.txt, torch pipelining ScheduleGPipe on gloo,
    3 stages, KILL_RANK=2 KILL_SIG=SIGKILL): rank 2 is SIGKILLed waiting in its irecv from rank
    1; rank 1 then raises "Connection reset by peer". The receives rank 2 never posted are its
    end's consequence, not a count mismatch (review r42-cause, item 2)."""
    doc = _real(tmp_path, "killin9c")
    head = doc["verdict"]["headline"]
    assert head.startswith("CRASHED: rank 2 ended first, without an exit record"), head
    assert "p2p-count-mismatch" not in {f["kind"] for f in doc["findings"]}
    assert doc["verdict"]["causes"][0]["kind"] == "rank-file-not-closed"


def test_a_rank_killed_while_all_wait_leads_the_hang(tmp_path: Path) -> None:
    """tests/record_fixtures/killin9 (../killin9c/pipe.py.txt, torch pipelining ScheduleGPipe on
    gloo, 3 stages, KILL_RANK=2 KILL_SIG=SIGKILL): rank 2 is SIGKILLed waiting in its irecv
    from rank 1 (no exit record, last line at +14.34 s); ranks 0 and 1, waiting on it, raise
    nothing and end by torchrun's SIGTERM 1.1 s later. Rank 2 ended first: it leads, the waits
    and SIGTERMs are its consequences (review h43, item 1)."""
    doc = _real(tmp_path, "killin9")
    head = doc["verdict"]["headline"]
    assert head.startswith("CRASHED: rank 2 ended first, without an exit record"), head
    assert "in irecv with rank 1 (pipe.py:35)" in head, head
    assert "rank 0 was left waiting in isend with rank 1 (pipe.py:34), then ended by SIGTERM" in head
    assert doc["verdict"]["causes"][0]["kind"] == "rank-file-not-closed"
    assert "run-stopped-in-op" in doc["verdict"]["causes"][0]["consequences"]


def test_the_launchers_sigterm_after_an_earlier_kill_is_a_consequence(tmp_path: Path) -> None:
    """tests/record_fixtures/multinode (termrace2.py.txt; README says which lines are edited):
    rank 2 SIGKILLed itself (last line at 6.2 s), rank 0 ended by SIGTERM at 8.29 s, rank 1's
    recv from rank 0 raised "Connection reset by peer" at 8.35 s. Rank 2 ended first; rank 0's
    SIGTERM (the launcher's answer) and rank 1's error follow from it (review h43, item 2)."""
    doc = _real(tmp_path, "multinode")
    head = doc["verdict"]["headline"]
    assert head.startswith("CRASHED: rank 2 ended first, without an exit record"), head
    assert "; rank 0 then ended by SIGTERM; rank 1 then raised RuntimeError" in head, head
    assert "rank-ended-by-signal" not in {f["kind"] for f in doc["findings"]}
    assert [c["kind"] for c in doc["verdict"]["causes"] if c["severity"] == "error"] \
        == ["rank-file-not-closed"]


def test_ranks_on_two_hosts_leave_the_order_of_the_ends_unknown(tmp_path: Path) -> None:
    """The killin9 recording with rank 2 on another host: its clock may differ by more than the
    1.1 s between its last line and the others' SIGTERM, so no rank is named as the first to
    end; the finding says the order is not known and where torchrun says it."""
    root = tmp_path / "trace"
    root.mkdir()
    for src in (FIXTURES / "killin9").iterdir():
        text = src.read_text()
        if src.name == "rank-2.jsonl":
            text = text.replace('"host":"vm"', '"host":"node2"', 1)
        (root / src.name).write_text(text)
    out = tmp_path / "r.json"
    cli.main(["report", "--trace", str(root), "--format", "json", "-o", str(out)])
    doc = json.loads(out.read_text())
    assert "ended first" not in doc["verdict"]["headline"], doc["verdict"]["headline"]
    assert "cannot order its end" in finding(doc, "rank-file-not-closed")["message"]


def test_a_short_rank_that_then_waits_in_a_barrier_is_a_count_mismatch(tmp_path: Path) -> None:
    """tests/record_fixtures/short2 (short2.py.txt, gloo, 2 ranks): rank 0 sends 2, rank 1
    receives 1, then both wait in dist.barrier(). Rank 1 finished the exchange and went on: its
    count is short, not cut; the barrier wait is the consequence (review r43-report-cause,
    item 1)."""
    doc = _real(tmp_path, "short2")
    head = doc["verdict"]["headline"]
    assert head.startswith("HANG: in one exchange, rank 1 posts 1 RECV(s) from 0 on default_pg "
                           "where rank 0 sends it 2 (sends at short2.py:8, receives at "
                           "short2.py:10)"), head
    assert doc["verdict"]["causes"][0]["kind"] == "p2p-count-mismatch"


def test_a_count_mismatch_explains_the_cycle_its_unmatched_send_closes(tmp_path: Path) -> None:
    """tests/record_fixtures/cut3 (cut3.py.txt, gloo, 3 ranks): rank 0 sends rank 1 two
    tensors, rank 1 receives one and then waits on rank 2, which waits on rank 0's third send.
    The count is the cause; the cycle through rank 0's unmatched send is its consequence, and
    reordering the exchange (the cycle's fix) cannot help (review r43-report-cause, item 1)."""
    doc = _real(tmp_path, "cut3")
    head = doc["verdict"]["headline"]
    assert head.startswith("HANG: in one exchange, rank 1 posts 1 RECV(s) from 0 on default_pg "
                           "where rank 0 sends it 2"), head
    cause = doc["verdict"]["causes"][0]
    assert cause["kind"] == "p2p-count-mismatch"
    assert "wait-for-cycle" in cause["consequences"]


def test_a_rank_without_an_exit_record_is_not_said_to_be_killed(tmp_path: Path) -> None:
    """tests/record_fixtures/exit0 (exit0.py.txt, gloo, 2 ranks, CODE=0): rank 1 ends with
    os._exit(0), which skips the exit record as a SIGKILL does; the headline says what the trace
    knows, not a SIGKILL or an abort inside gloo (review r43-report-cause, item 2)."""
    doc = _real(tmp_path, "exit0")
    head = doc["verdict"]["headline"]
    assert head.startswith("CRASHED: rank 1 ended first, without an exit record (killed, or "
                           "ended past Python's exit handlers: os._exit, an abort), outside any "
                           "op"), head
    assert "SIGKILL" not in head and "gloo or NCCL" not in head, head


def test_peer_lost_reads_the_rules_texts():
    """`[[peer_lost]]` in rules/torch.toml: gloo's and NCCL's words for a peer that closed its
    end; an exception of the rank's own is not one."""
    from auditor.analysis import peerend
    assert peerend.peer_lost("[pair.cc:537] Read error [127.0.0.1]:32429: Connection reset by peer")
    assert not peerend.peer_lost("RuntimeError: shape mismatch")
    assert not peerend.peer_lost(None)


CLOSED = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
          "Connection closed by peer [127.0.0.1]:17832. This is typically caused by a remote "
          "worker crashing.")


def _wrap(chain: list[str] | None) -> tuple[tuple[Rank, bool], tuple[Rank, bool]]:
    """wrap.py (review r43-report-cause item 2, gloo, torch 2.13 CPU): rank 1 is SIGKILLed
    between steps; rank 0's recv raises "Connection reset by peer" and the program re-raises it
    as `raise RuntimeError("pipeline step 3 failed") from e` (its exception line's `chain`)."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "send", 1, "wrap.py:14", [4])
    zero.op(1.1, "recv", 1, "wrap.py:12", [4], end="raise", error=RESET, end_t=2.0)
    zero.crash(2.01, "RuntimeError: pipeline step 3 failed on rank 0", "wrap.py:16", chain=chain)
    one.op(1.0, "recv", 0, "wrap.py:12", [4])
    one.op(1.05, "send", 0, "wrap.py:14", [4])
    return (zero, False), (one, True)


def test_a_wrapped_reset_follows_the_peer_that_ended_first(tmp_path: Path) -> None:
    """The wrapper's error is the reset's consequence (its chain holds the reset): rank 1's end
    leads, not rank 0's exception."""
    code, doc = report(tmp_path, *_wrap([RESET]))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert head.startswith("CRASHED: rank 1 ended first, without an exit record"), head
    assert "rank 0 then raised RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/" \
           "tcp/pair.cc:537] Read error [127.0.0.1]:54454: Connection reset by peer in recv with " \
           "rank 1 at wrap.py:12 (a consequence)" in head, head
    cause = doc["verdict"]["causes"][0]
    assert cause["kind"] == "rank-file-not-closed"
    assert "run-crashed" in cause["consequences"]


def test_collectives_raised_after_the_first_end_are_its_consequences(tmp_path: Path) -> None:
    """Review r43-report-cause item 5 (coll.py, gloo, torch 2.13 CPU): rank 1 is SIGKILLed while
    it computes; rank 0 then raises "Connection closed by peer" inside all_reduce. That
    collective's error names no peer; it is the first end's consequence, listed in the
    headline."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "send", 1, "coll.py:11", [4])
    start = zero.add(1.1, api="all_reduce", phase="start", kind="collective", batched=False, peer=None,
                     group="0", site={"path": "coll.py", "line": 14, "end_line": 14, "function": "f"},
                     shape=[4], dtype="float32")
    zero.add(2.0, api="all_reduce", phase="end", of=start, how="raise", error=CLOSED)
    zero.crash(2.01, CLOSED, "coll.py:14")
    one.op(1.0, "recv", 0, "coll.py:11", [4])
    code, doc = report(tmp_path, (zero, False), (one, True))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert head.startswith("CRASHED: rank 1 ended first"), head
    assert head.endswith("; rank 0 then raised RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/"
                         "gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:17832 "
                         "in all_reduce at coll.py:14 (a consequence)."), head


def _short(end: str) -> tuple[tuple[Rank, bool], tuple[Rank, bool]]:
    """exit0.py (review r43-report-cause items 3/4, gloo, torch 2.13 CPU): rank 0 sends 2
    tensors, rank 1 receives 1 and ends: `end` "exit" (its main module returns: an exit line)
    or "os._exit" (os._exit(0): no exit record); rank 0's second send then raises."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "send", 1, "exit0.py:9", [4])
    zero.op(1.1, "send", 1, "exit0.py:9", [4], end="raise", error=CLOSED, end_t=2.0)
    zero.crash(2.01, CLOSED, "exit0.py:9")
    one.op(1.0, "recv", 0, "exit0.py:11", [4])
    if end == "exit":
        one.add(1.5, api="process", phase="exit", how="exit", status=None)
    return (zero, False), (one, end != "exit")


def test_a_clean_exit_with_a_short_count_is_the_cause_not_the_survivor(tmp_path: Path) -> None:
    """Item 4 (exit0ret): rank 1 exits by itself with rank 0's second send unmatched; the count
    is the cause, rank 0's "Connection closed by peer" its consequence (the report blamed rank
    0's crash)."""
    code, doc = report(tmp_path, *_short("exit"))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert head.startswith("CRASHED: in one exchange, rank 1 posts 1 RECV(s) from 0 on default_pg "
                           "where rank 0 sends it 2 (sends at exit0.py:9, receives at exit0.py:11), "
                           "and rank 1 then exited by itself"), head
    assert "rank 0 then raised RuntimeError" in head and "in send with rank 1 at exit0.py:9" in head
    cause = doc["verdict"]["causes"][0]
    assert cause["kind"] == "p2p-count-mismatch"
    assert {"run-crashed", "run-op-raised"} <= set(cause["consequences"])


def test_an_os_exit_lists_its_short_count_beside_its_end(tmp_path: Path) -> None:
    """Item 3 (exit0, os._exit(0)): no exit record, so the trace cannot tell it from a kill;
    the count it left short is listed beside its end with the exit code that decides."""
    code, doc = report(tmp_path, *_short("os._exit"))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert head.startswith("CRASHED: rank 1 ended first, without an exit record"), head
    assert ("; it left one exchange short (in one exchange, rank 1 posts 1 RECV(s) from 0 on "
            "default_pg where rank 0 sends it 2, sends at exit0.py:9, receives at exit0.py:11): the "
            "cause if its program ended it there (an os._exit: exit code 0 in the launcher's log), "
            "else cut by its kill") in head, head
    assert doc["run"]["waitfor"]["cut_counts"][0]["short"] == 1


def test_a_trace_without_the_chain_lets_the_own_crash_lead(tmp_path: Path) -> None:
    """A recorder before the `chain` field: nothing says the wrapper's error follows the reset,
    so rank 0's own crash leads, as the report said before."""
    code, doc = report(tmp_path, *_wrap(None))
    head = doc["verdict"]["headline"]
    assert head.startswith("CRASHED: rank 0 raised RuntimeError: pipeline step 3 failed on rank 0 "
                           "at wrap.py:16"), head


def test_an_own_error_after_a_caught_loss_leads(tmp_path: Path) -> None:
    """Review r44-report item 1 (ownbug_c.py, gloo, torch 2.13 CPU): rank 1 os._exit(0)s; rank 0
    catches the failed all_reduce of its metric sync, goes on, and raises its own ValueError
    (chain empty). That error is its own and leads; the report had hidden it under rank 1's end."""
    zero, one = Rank(0), Rank(1)
    start = zero.add(1.1, api="all_reduce", phase="start", kind="collective", batched=False, peer=None,
                     group="0", site={"path": "ownbug_c.py", "line": 14, "end_line": 14, "function": "f"},
                     shape=[4], dtype="float32")
    zero.add(1.2, api="all_reduce", phase="end", of=start, how="raise", error=CLOSED)
    zero.crash(1.5, "ValueError: loss is NaN at step 4", "ownbug_c.py:18", chain=[])
    one.add(1.0, api="barrier", phase="start", kind="collective", batched=False, peer=None, group="0",
            site={"path": "ownbug_c.py", "line": 8, "end_line": 8, "function": "f"})
    one.add(1.01, api="barrier", phase="end", of=len(one.lines) - 1, how="return")
    code, doc = report(tmp_path, (zero, False), (one, True))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert head.startswith("CRASHED: rank 0 raised ValueError: loss is NaN at step 4 at "
                           "ownbug_c.py:18"), head


def test_a_collective_is_not_credited_to_an_end_outside_its_group(tmp_path: Path) -> None:
    """Review r44-report item 2 (shape_x.py, gloo, torch 2.13 CPU): rank 2 os._exit(0)s; ranks 0
    and 1 all_reduce on new_group([0, 1]) with 4 vs 8 floats, rank 0 aborts and rank 1's
    all_reduce raises "Connection reset by peer". Rank 2 is no member of that group: rank 1's
    error is not rank 2's consequence."""
    world = {**GROUP, "ranks": [0, 1, 2], "size": 3}
    pair = {**GROUP, "desc": "undefined", "name": "1"}
    ranks = [Rank(r) for r in range(3)]
    for rank in ranks:
        rank.lines[0]["world_size"] = 3
        rank.lines[1]["group"] = world
        if rank.rank < 2:
            rank.add(0.2, api="group", phase="group", group=pair)
    for rank, t in ((ranks[0], 1.0), (ranks[1], 1.0)):
        start = rank.add(t, api="all_reduce", phase="start", kind="collective", batched=False,
                         peer=None, group="1", shape=[4 if rank.rank == 0 else 8], dtype="float32",
                         site={"path": "shape_x.py", "line": 13, "end_line": 13, "function": "f"})
    ranks[1].add(1.2, api="all_reduce", phase="end", of=start, how="raise", error=RESET)
    ranks[1].crash(1.21, RESET, "shape_x.py:13", chain=[])
    code, doc = report(tmp_path, (ranks[0], True), (ranks[1], False), (ranks[2], True))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert "rank 1 then raised" not in head, head
    assert not any(loss == 2 for loss in (finding(doc, "rank-file-not-closed")["detail"]
                                          .get("lost") or {}).values()), doc


def test_an_error_exit_is_no_normal_end_and_leads_with_its_status(tmp_path: Path) -> None:
    """Review r44-report item 3 (sysexit3.py, gloo, torch 2.13 CPU): rank 0 sends 2; rank 1
    receives 1, then sys.exit(3) (exit line: how "exit", status 3); rank 0's second send raises
    "Connection closed by peer". The report called the exit "a normal end"; it is rank 1's own
    error exit, and the headline says its status."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "send", 1, "sysexit3.py:9", [4])
    zero.op(1.1, "send", 1, "sysexit3.py:9", [4], end="raise", error=CLOSED, end_t=2.0)
    zero.crash(2.01, CLOSED, "sysexit3.py:9", chain=[])
    one.op(1.0, "recv", 0, "sysexit3.py:11", [4])
    one.add(1.5, api="process", phase="exit", how="exit", status=3)
    code, doc = report(tmp_path, (zero, False), (one, False))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS
    assert "a normal end" not in head, head
    assert head.startswith("CRASHED: rank 1 ended first, by its own exit with status 3 (sys.exit), "
                           "outside any op; rank 0 then raised RuntimeError"), head


def _exit3(pending: bool) -> tuple[tuple[Rank, bool], tuple[Rank, bool]]:
    """sysexit3.py as recorded in /tmp/h44r2/sysexit3 (gloo, torch 2.13 CPU): rank 0 sends, then
    sleeps (`pending`: waits in a second send instead); rank 1 receives, then sys.exit(3); torchrun
    then SIGTERMs rank 0. No op raises."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "send", 1, "sysexit3.py:9", [4])
    if pending:
        zero.op(1.2, "send", 1, "sysexit3.py:9", [4], end=None)
    zero.signal(2.0)
    one.op(1.0, "recv", 0, "sysexit3.py:11", [4])
    one.add(1.1, api="process", phase="exit", how="exit", status=3)
    return (zero, False), (one, False)


def test_an_error_exit_with_no_op_raised_is_not_clean(tmp_path: Path) -> None:
    """Review h44r2: the real recording read CLEAN, though rank 1 exited with status 3 and rank 0
    was ended by the launcher's SIGTERM outside any op."""
    code, doc = report(tmp_path, *_exit3(pending=False))
    head = doc["verdict"]["headline"]
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "findings", head
    assert head == ("CRASHED: rank 1 ended first, by its own exit with status 3 (sys.exit), "
                    "outside any op; rank 0 then ended by SIGTERM (a consequence)."), head
    assert "status 3" in finding(doc, "rank-ended-by-signal")["fix"]


def test_an_error_exit_leads_the_wait_it_left_behind(tmp_path: Path) -> None:
    code, doc = report(tmp_path, *_exit3(pending=True))
    head = doc["verdict"]["headline"]
    assert head.startswith("CRASHED: rank 1 ended first, by its own exit with status 3 (sys.exit), "
                           "outside any op; rank 0 was left waiting in send with rank 1"), head


def test_a_signal_that_ended_a_wait_stays_a_hang(tmp_path: Path) -> None:
    """Every rank SIGTERMed inside an op (a time limit ending a hang): the hang is what the run did."""
    zero, one = Rank(0), Rank(1)
    zero.op(1.0, "recv", 1, "t.py:3", [4], end=None)
    one.op(1.0, "recv", 0, "t.py:5", [4], end=None)
    zero.signal(9.0)
    one.signal(9.0)
    code, doc = report(tmp_path, (zero, False), (one, False))
    assert not doc["verdict"]["headline"].startswith("CRASHED"), doc["verdict"]["headline"]
