"""A process that dies of a Python exception is a crash, not a hang: the recorder writes how each
process ended (`exception` and `exit` lines), and the report's headline says CRASHED on the rank
that raised first, with the exception and its line, naming what the other ranks waited on.

The runs: record_fixtures/crash_pipeline.py (2 gloo ranks under torchrun, reproducing
torchtitan 0.2.2's DualPipeV step raising "Accelerator expected" with receives in flight). The
in-process tests drive the hooks directly: they chain the program's own hooks and never raise
into it, whatever the recorder's state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import signal
import threading
import time
from pathlib import Path

import pytest

from auditor.dynamic import ending, hooks, rankfile
from auditor.dynamic.recorder import Recorder
from auditor.errors import InputError
from tests.dynamic.test_trace_schema import assert_valid

HERE = Path(__file__).resolve().parents[1]
SCRIPT = HERE / "record_fixtures" / "crash_pipeline.py"
REPO = HERE.parent


def line_of(tag: str) -> int:
    return next(n for n, text in enumerate(SCRIPT.read_text().splitlines(), 1) if tag in text)


def record_crash(out: Path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", str(out), "--",
         sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(SCRIPT)],
        env=dict(os.environ, CRASH=mode), cwd=REPO, capture_output=True, text=True, timeout=180)


def rank_lines(out: Path, rank: int) -> list[dict]:
    (file,) = out.glob(f"rank-{rank}*.jsonl")
    return [json.loads(raw) for raw in file.read_bytes().split(b"\n") if raw.strip(b"\0 ")]


def report(out: Path, tmp_path: Path) -> tuple[int, dict]:
    target = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "auditor", "report", "--trace", str(out),
                           "--format", "json", "-o", str(target)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(target.read_text())


@pytest.mark.heavy
def test_one_rank_raises_mid_pipeline_is_a_crash_on_that_rank(tmp_path: Path) -> None:
    out = tmp_path / "trace"
    done = record_crash(out, "one")
    assert done.returncode != 0, done.stdout + done.stderr
    assert (f"rank 0: 1 ops (1 P2P, 1 of them unbatched), 0 pending at the end; died of "
            f"RuntimeError: Accelerator expected at crash_pipeline.py:{line_of('CRASH-ONE')}"
            in done.stdout + done.stderr)
    lines = rank_lines(out, 0)
    (exc,) = [e for e in lines if e["phase"] == "exception"]
    assert exc["error"] == "RuntimeError: Accelerator expected" and exc["main"] is True
    assert (exc["at"]["path"], exc["at"]["line"]) == ("crash_pipeline.py", line_of("CRASH-ONE"))
    assert lines[-1]["phase"] == "exit" and lines[-1]["status"] == 1
    assert assert_valid(out) > 0
    status, doc = report(out, tmp_path)
    head = doc["verdict"]["headline"]
    assert status == 1 and doc["verdict"]["status"] == "findings"
    assert head.startswith("CRASHED: rank 0 raised RuntimeError: Accelerator expected at "
                           f"crash_pipeline.py:{line_of('CRASH-ONE')}"), head
    assert "HANG" not in head and "rank 1" in head  # the partner left waiting: a consequence
    kinds = [f["kind"] for f in doc["findings"]]
    assert "run-crashed" in kinds and "0" not in doc["run"]["trace"]["pending"]
    # the Parquet export reads the same lines (an ending is no op: a note)
    pytest.importorskip("pyarrow")
    exported = subprocess.run([sys.executable, "-m", "auditor", "export", str(out), "--format",
                               "parquet", "-o", str(tmp_path / "pq")],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
    assert exported.returncode == 0, exported.stderr
    assert "the process died of RuntimeError: Accelerator expected" in exported.stderr


@pytest.mark.heavy
def test_both_ranks_raise_is_a_crash_on_both(tmp_path: Path) -> None:
    out = tmp_path / "trace"
    done = record_crash(out, "both")
    assert done.returncode != 0, done.stdout + done.stderr
    for rank in (0, 1):
        (exc,) = [e for e in rank_lines(out, rank) if e["phase"] == "exception"]
        assert exc["at"]["line"] == line_of("CRASH-BOTH")
    assert assert_valid(out) > 0
    status, doc = report(out, tmp_path)
    head = doc["verdict"]["headline"]
    assert status == 1 and head.startswith("CRASHED: "), head
    assert "rank(s) 0-1 raised" in head and "Accelerator expected" in head, head
    assert doc["run"]["trace"]["pending"] == {}  # in flight when they died: not waiting
    (crash,) = [f for f in doc["findings"] if f["kind"] == "run-crashed"]
    assert "op(s) left open on the crashed rank(s) were in flight" in crash["message"]
    # the pictures say the same: the ops left open were in flight at exit, none is pending
    open_ops = [ev for lane in doc["run"]["timeline"]["ranks"] for ev in lane["events"]
                if ev["recorded"] not in ("done", "error")]
    assert open_ops and {ev["recorded"] for ev in open_ops} == {"in flight at exit"}
    perfetto = tmp_path / "run.perfetto.json"
    drawn = subprocess.run([sys.executable, "-m", "auditor", "report", "--trace", str(out),
                            "--format", "perfetto", "-o", str(perfetto)],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
    assert drawn.returncode == 1, drawn.stderr
    names = [e["name"] for e in json.loads(perfetto.read_text())["traceEvents"] if e.get("ph") == "B"]
    assert names and all(n.startswith("IN FLIGHT AT EXIT ") for n in names), names


# --- the hooks in-process: chained, and never raising into the program ---------------------------
@pytest.fixture
def rec(tmp_path: Path):
    recorder = Recorder(tmp_path / "trace", hang_after=0)
    (tmp_path / "trace").mkdir()
    recorder.open(0)
    yield recorder
    recorder.close()


def test_hooks_chain_the_programs_hooks_and_write_the_exception(rec, monkeypatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(sys, "exit", sys.exit)  # put back after the test
    monkeypatch.setattr(sys, "excepthook", lambda t, v, tb: seen.append(f"sys {v}"))
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(f"thread {args.exc_value}"))
    ending.install(rec)
    try:
        raise ValueError("boom")
    except ValueError as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    worker = threading.Thread(target=lambda: (_ for _ in ()).throw(KeyError("k")), name="w")
    worker.start()
    worker.join()
    assert seen == ["sys boom", "thread 'k'"]
    rec.close()
    written = [json.loads(x) for x in rec.path.read_text().splitlines()]
    first, second = [e for e in written if e["phase"] == "exception"]
    assert first["error"] == "ValueError: boom" and first["main"] is True
    assert first["at"]["function"] == "test_hooks_chain_the_programs_hooks_and_write_the_exception"
    assert second["thread"] == "w" and second["main"] is False
    assert assert_valid(rec.directory) > 0


def test_the_exception_line_writes_the_chain_it_was_raised_from(rec, monkeypatch) -> None:
    """wrap.py (review r44-report, gloo, torch 2.13 CPU) wraps a recv's "Connection reset by
    peer" as `raise RuntimeError(...) from e`; ownbug_c.py catches such a loss, goes on, and
    raises its own ValueError. The report tells the two apart only by the exception's chain
    (`__cause__`, else `__context__`), so the line holds it: the wrapped loss, and nothing for an
    error raised after its handler ended."""
    monkeypatch.setattr(sys, "exit", sys.exit)
    monkeypatch.setattr(sys, "excepthook", lambda t, v, tb: None)
    ending.install(rec)
    reset = "Read error [127.0.0.1]:18816: Connection reset by peer"
    try:
        try:
            raise RuntimeError(reset)
        except RuntimeError as e:
            raise RuntimeError("pipeline step 3 failed on rank 1") from e
    except RuntimeError as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    try:
        raise RuntimeError(reset)
    except RuntimeError:
        pass  # the program skips a failed metric sync
    try:
        raise ValueError("loss is NaN")
    except ValueError as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    rec.close()
    wrapped, own = [e for e in map(json.loads, rec.path.read_text().splitlines())
                    if e["phase"] == "exception"]
    assert wrapped["chain"] == [{"type": "RuntimeError", "error": f"RuntimeError: {reset}"}]
    assert own["chain"] == []
    assert assert_valid(rec.directory) > 0


def test_an_op_that_raised_names_the_frame_of_the_program_not_the_recorders(rec, monkeypatch) -> None:
    """A gloo op whose wait raised (torch 2.13.0's Schedule1F1B, its peer killed -9: rank 0's
    `exception` line said `raised` at auditor/dynamic/hooks.py:351, the recorder's wrapper of
    Work.wait, and the report's fix sent the user there). torch's wait is C++, no frame of its
    own: the innermost frame outside the recorder is torch's caller of it."""
    monkeypatch.setattr(sys, "exit", sys.exit)
    monkeypatch.setattr(sys, "excepthook", lambda t, v, tb: None)
    ending.install(rec)
    work = object()
    rec.works[id(work)] = (lambda: None, [])
    torch_module = {"__name__": "torch.distributed.distributed_c10d",
                    "wait": hooks._work_wait(rec, divmod), "work": work}  # divmod: C, raises
    exec(compile("def recv():\n    wait(work, 0)\n", "distributed_c10d.py", "exec"), torch_module)
    try:
        torch_module["recv"]()
    except TypeError as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    rec.close()
    (written,) = [e for e in map(json.loads, rec.path.read_text().splitlines())
                  if e["phase"] == "exception"]
    assert written["at"]["function"].endswith("test_an_op_that_raised_names_the_frame_of_the_"
                                              "program_not_the_recorders")
    assert (written["raised"]["function"], written["raised"]["line"]) == ("recv", 2), written


def test_a_failing_recorder_never_raises_into_the_program(rec, monkeypatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(sys, "exit", sys.exit)
    monkeypatch.setattr(sys, "excepthook", lambda t, v, tb: seen.append("program's hook"))
    ending.install(rec)

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no str")

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    real = rec._emit_locked
    monkeypatch.setattr(rec, "_emit_locked", broken)
    sys.excepthook(ValueError, ValueError("x"), None)  # no traceback at all
    assert seen == ["program's hook"]
    # the recorder's lock held by a thread that never lets go: neither waits for it
    monkeypatch.setattr(rec, "_emit_locked", real)
    monkeypatch.setattr(ending, "LOCK_WAIT", 0.05)
    held = threading.Lock()
    held.acquire()
    monkeypatch.setattr(rec, "lock", held)
    started = time.monotonic()
    sys.excepthook(Unprintable, Unprintable(), None)
    ending.at_exit(rec)
    assert time.monotonic() - started < 1 and seen == ["program's hook"] * 2
    with pytest.raises(SystemExit):
        sys.exit(3)
    assert ending._state(rec)["status"] == 3


# --- the reader: which end keeps a rank's open ops as waiting ------------------------------------
def _rank(ending_lines: list[dict]) -> rankfile.RankTrace:
    group = {"ranks": [0, 1], "size": 2, "desc": "default_pg", "name": "0", "backend": "gloo",
             "eager": False}
    lines = [{"seq": 0, "t": 0.0, "rank": 0, "api": "process", "phase": "meta", "wall0": 1.0},
             {"seq": 1, "t": 0.1, "rank": 0, "api": "group", "phase": "group", "group": group},
             {"seq": 2, "t": 0.2, "rank": 0, "api": "recv", "phase": "start", "kind": "p2p",
              "site": None, "batched": False, "peer": 1, "group": "0", "shape": [4],
              "dtype": "torch.float32"}]
    lines += [{"seq": 3 + i, "t": 0.3, "rank": 0, "api": "process", **e}
              for i, e in enumerate(ending_lines)]
    return rankfile.rank_trace(0, Path("rank-0.jsonl"), enumerate(lines, 1), keep=100)


@pytest.mark.parametrize("ending_lines, waiting", [
    ([], True),  # no end record: killed, or still running (today's reading)
    ([{"phase": "exit", "how": "signal", "signal": "SIGTERM"}], True),  # a hung rank ended by it
    ([{"phase": "exit", "how": "exit", "status": 0}], False),  # exited with the op in flight
    ([{"phase": "exception", "error": "E: x", "type": "E", "thread": "MainThread", "main": True},
      {"phase": "exit", "how": "exception", "status": 1}], False),
    ([{"phase": "exception", "error": "E: x", "type": "E", "thread": "w", "main": False}], True),
])
def test_a_rank_that_ended_by_itself_is_not_waiting(ending_lines, waiting) -> None:
    rt = _rank(ending_lines)
    assert bool(rt.pending()) is waiting
    assert (rt.crash is not None) is any(e.get("main") for e in ending_lines)


@pytest.mark.parametrize("bad", [
    {"phase": "exception", "error": 3, "main": True},
    {"phase": "exception", "error": "E", "main": "yes"},
    {"phase": "exception", "error": "E", "main": True, "at": "x.py:3"},
    {"phase": "exception", "error": "E", "main": True, "chain": "RuntimeError: reset"},
    {"phase": "exception", "error": "E", "main": True, "chain": [{"type": "RuntimeError"}]},
    {"phase": "exit", "how": "vanished"},
    {"phase": "exit", "how": "exit", "status": "0"},
])
def test_a_malformed_ending_line_is_bad_input_naming_the_file(bad) -> None:
    with pytest.raises(InputError, match="rank-0.jsonl"):
        _rank([bad])


# --- NCCL's reading: the partner never notices, the launcher ends it with SIGTERM ----------------
def _write_rank(directory: Path, rank: int, ending_lines: list[dict]) -> None:
    group = {"ranks": [0, 1], "size": 2, "desc": "default_pg", "name": "0", "backend": "nccl",
             "eager": False}
    site = {"path": "train.py", "line": 40 + rank, "function": "step"}
    lines = [{"seq": 0, "t": 0.0, "rank": rank, "api": "process", "phase": "meta", "pid": 10 + rank,
              "host": "h", "argv": [], "python": "3.11", "torch": "2.13.0",
              "recorder": "p2paudit 0", "hang_after": 300, "mono0": 1.0, "wall0": 100.0,
              "world_size": 2},
             {"seq": 1, "t": 0.1, "rank": rank, "api": "group", "phase": "group", "group": group},
             {"seq": 2, "t": 0.2, "rank": rank, "api": "recv" if rank else "send", "phase": "start",
              "kind": "p2p", "site": site, "batched": False, "peer": 1 - rank, "group": "0",
              "shape": [4], "dtype": "torch.float32"}]
    lines += [{"seq": 3 + i, "t": 1.0 + i, "rank": rank, "api": "process", **e}
              for i, e in enumerate(ending_lines)]
    (directory / f"rank-{rank}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_crash_leads_and_the_partner_waiting_until_sigterm_is_its_consequence(tmp_path) -> None:
    """Under NCCL rank 1's recv never learns that rank 0 died; torchrun then SIGTERMs it: rank 1
    is still read as waiting (a signal's end keeps its op pending), named as the consequence."""
    out = tmp_path / "trace"
    out.mkdir()
    _write_rank(out, 0, [
        {"phase": "exception", "error": "ValueError: bad batch", "type": "ValueError",
         "thread": "MainThread", "main": True,
         "at": {"path": "train.py", "line": 77, "function": "step"}},
        {"phase": "exit", "how": "exception", "status": 1}])
    _write_rank(out, 1, [{"phase": "exit", "how": "signal", "signal": "SIGTERM"}])
    assert assert_valid(out) == 9
    status, doc = report(out, tmp_path)
    assert status == 1
    assert doc["verdict"]["headline"] == (
        "CRASHED: rank 0 raised ValueError: bad batch at train.py:77; rank 1 was left waiting in "
        "recv with rank 0 (train.py:41); rank(s) 1 then ended by SIGTERM (consequences).")
    assert doc["run"]["trace"]["pending"] == {"1": 1}
    (cause,) = doc["verdict"]["causes"]
    assert cause["kind"] == "run-crashed" and "run-stopped-in-op" in cause["consequences"]
    # the same trace without rank 0's end record: today's reading, a hang
    (out / "rank-0.jsonl").write_text("".join(
        x + "\n" for x in (out / "rank-0.jsonl").read_text().splitlines()[:3]))
    status, doc = report(out, tmp_path)
    assert status == 1 and doc["verdict"]["headline"].startswith("HANG: "), doc["verdict"]


@pytest.mark.heavy
def test_a_rank_ended_by_sigterm_while_waiting_is_still_a_hang(tmp_path: Path) -> None:
    """The signal path for real: rank 1 blocked in gloo's recv (inside C++), SIGTERM: the
    watchdog writes the `exit` line and the process dies by the signal; the report keeps the
    hang reading (no exception anywhere)."""
    out = tmp_path / "trace"
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor", "record", "--out", str(out), "--",
         sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(SCRIPT)],
        env=dict(os.environ, CRASH="hang"), cwd=REPO, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline, "rank 1 never reached its second recv"
            files = list(out.glob("rank-1*.jsonl"))
            if files:
                lines = [json.loads(raw) for raw in files[0].read_bytes().split(b"\n")
                         if raw.strip(b"\0 ") and raw.endswith(b"}")]
                if sum(1 for e in lines if e.get("api") == "recv" and e["phase"] == "start") == 2:
                    break
            time.sleep(0.2)
        time.sleep(0.5)  # inside the recv, in C++
        os.kill(lines[0]["pid"], signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    last = rank_lines(out, 1)[-1]
    assert (last["phase"], last["how"], last["signal"]) == ("exit", "signal", "SIGTERM")
    assert assert_valid(out) > 0
    status, doc = report(out, tmp_path)
    assert status == 1 and doc["verdict"]["headline"].startswith("HANG: "), doc["verdict"]
    assert doc["run"]["trace"]["pending"]["1"] == 1


def test_ctrl_c_is_an_interrupt_not_a_crash(rec, monkeypatch) -> None:
    """A user's Ctrl-C on a hung job: the exit line says SIGINT, no exception line, so the ranks
    stay read as waiting (a hang)."""
    monkeypatch.setattr(sys, "exit", sys.exit)
    monkeypatch.setattr(sys, "excepthook", lambda t, v, tb: None)
    ending.install(rec)
    sys.excepthook(KeyboardInterrupt, KeyboardInterrupt(), None)
    ending.at_exit(rec)
    rec.close()
    written = [json.loads(x) for x in rec.path.read_text().splitlines()]
    assert [e["phase"] for e in written] == ["meta", "exit"]
    assert (written[-1]["how"], written[-1]["signal"]) == ("signal", "SIGINT")


def test_a_thread_that_died_is_a_warning_beside_the_hang(tmp_path: Path) -> None:
    """A thread's uncaught exception does not end its process: the waiting rank stays a hang,
    and the thread's death is said beside it, the likely cause."""
    out = tmp_path / "trace"
    out.mkdir()
    thread = {"phase": "exception", "error": "KeyError: 'grad'", "type": "KeyError",
              "thread": "backward", "main": False,
              "at": {"path": "overlap.py", "line": 12, "function": "run_backward"}}
    _write_rank(out, 0, [thread])
    _write_rank(out, 1, [])
    status, doc = report(out, tmp_path)
    assert status == 1 and doc["verdict"]["headline"].startswith("HANG: "), doc["verdict"]
    assert doc["run"]["trace"]["pending"] == {"0": 1, "1": 1}
    (found,) = [f for f in doc["findings"] if f["kind"] == "thread-raised"]
    assert found["severity"] == "warning" and found["where"] == "overlap.py:12"
    assert "rank 0's thread 'backward': KeyError: 'grad'" in found["message"]
