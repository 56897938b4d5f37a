"""The recorder inside one process: site naming, the trace reader, and the hooks' promise to
change nothing (same results, same exceptions, one event per call, off on internal failure),
against this process's real torch.distributed on a 1-rank gloo group."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from auditor.cli import main as cli_main
from auditor.dynamic import callsite, hooks, rankfile, record, trace
from auditor.dynamic.recorder import Recorder
from auditor.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "record_fixtures"


# --- call sites ---------------------------------------------------------------------------------

def _site() -> dict:
    return json.loads(callsite.caller_site(2))


class Holder:
    def method(self) -> tuple[dict, dict]:
        def inner() -> dict:
            return _site(
            )
        return inner(), [_site() for _ in range(1)][0]


def test_site_is_package_relative_with_qualname_and_call_span() -> None:
    nested, comprehension = Holder().method()
    assert nested["path"] == "tests/dynamic/test_record_unit.py"  # package-relative: tests.dynamic
    assert nested["function"] == "Holder.method.<locals>.inner"
    assert nested["end_line"] == nested["line"] + 1  # the call spans two lines
    # a comprehension's own frame (Python 3.11) is reported as the function that holds it
    assert comprehension["function"] == "Holder.method"


@pytest.mark.parametrize("module, filename, path", [
    ("megatron.core.pipeline_parallel.p2p_communication",
     "/x/site-packages/megatron/core/pipeline_parallel/p2p_communication.py",
     "megatron/core/pipeline_parallel/p2p_communication.py"),
    ("megatron.core", "/x/megatron/core/__init__.py", "megatron/core/__init__.py"),
    ("", "/home/u/train.py", "train.py"),
    ("renamed", "/home/u/train.py", "train.py"),
    ("", "<string>", "<string>"),
])
def test_package_path(module: str, filename: str, path: str) -> None:
    assert callsite.package_path(module, filename) == path


# --- the reader ---------------------------------------------------------------------------------

def test_reader_truncated_line_missing_rank_restart_and_bad_hang(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "pipeline", tmp_path / "t")
    d = tmp_path / "t"
    (d / "rank-3.jsonl").unlink()
    lines = (d / "rank-2.jsonl").read_text().splitlines(keepends=True)
    (d / "rank-2.jsonl").write_text("".join(lines[:-1]) + lines[-1][:17])
    restarted = json.loads(lines[0])
    restarted.update(rank=0, pid=1, wall0=restarted["wall0"] + 100)
    (d / "rank-0.1.jsonl").write_text(json.dumps(restarted) + "\n")
    (d / "hang-rank-1.json").write_text("{")
    t = trace.read_trace_dir(d)
    assert sorted(t.ranks) == [0, 1, 2] and t.missing == [3] and t.world_size == 4
    assert t.ranks[0].path.name == "rank-0.1.jsonl" and t.ranks[0].head == []
    assert [rt.path.name for rt in t.earlier[0]] == ["rank-0.jsonl"]
    assert len(t.ranks[2].head) == len(lines) - 2  # all but the meta line and the cut line
    assert t.ranks[2].complete
    assert t.ranks[1].hang is None
    notes = "\n".join(t.skipped)
    assert f"rank-2.jsonl:{len(lines)}: truncated last line" in notes
    assert "hang-rank-1.json: unreadable hang file" in notes
    assert "rank 3: no trace file" in notes and "rank 0: earlier process" in notes


def _report_of(trace_dir: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    scan = tmp_path / "scan.json"
    scan.write_text(json.dumps({"sites": [], "targets": [], "findings": [], "config": {}}))
    return subprocess.run([sys.executable, "-m", "auditor", "report", "--scan", str(scan),
                           "--trace", str(trace_dir), "--format", "json"],
                          capture_output=True, text=True, timeout=120)


def _edit_line(file: Path, number: int, change) -> None:
    lines = file.read_text().splitlines(keepends=True)
    event = json.loads(lines[number - 1])
    change(event)
    lines[number - 1] = json.dumps(event) + "\n"
    file.write_text("".join(lines))


def _first_p2p_line(file: Path) -> int:
    return next(n for n, text in enumerate(file.read_text().splitlines(), 1)
                if '"phase":"start","kind":"p2p"' in text)


@pytest.mark.parametrize("case", ["peer 99", "peer 99 inline group", "peer 99 without group",
                                  "seq text", "group 5", "not JSON", "two runs",
                                  "rank 0 in rank-1.jsonl", "rank field", "ends not pairs"])
def test_inconsistent_trace_is_bad_input_naming_the_file(tmp_path: Path, case: str) -> None:
    """Never a traceback, never an analysis of it: exit 2 and one line naming file and cause."""
    d = tmp_path / "t"
    shutil.copytree(FIXTURES / "pipeline", d)
    rank0 = d / "rank-0.jsonl"
    n = _first_p2p_line(rank0)
    where, cause = f"{rank0}:{n}", None
    if case == "peer 99":  # the group named, as today's recorder writes it
        _edit_line(rank0, n, lambda e: e.update(peer=99))
        cause = "peer 99 is not in its group [0, 1, 2, 3]"
    elif case == "peer 99 inline group":  # earlier recorders repeated the group in each line
        declared = next(json.loads(x)["group"] for x in rank0.read_text().splitlines()
                        if '"phase":"group"' in x)
        _edit_line(rank0, n, lambda e: e.update(peer=99, group=declared))
        cause = "peer 99 is not in its group [0, 1, 2, 3]"
    elif case == "peer 99 without group":
        _edit_line(rank0, n, lambda e: e.update(peer=99, group=None))
        cause = "rank 99 (a peer or group member) is outside the world of 4 ranks"
    elif case == "seq text":
        _edit_line(rank0, n, lambda e: e.update(seq="x"))
        cause = "not a trace line (seq 'x')"
    elif case == "group 5":
        _edit_line(rank0, n, lambda e: e.update(group=5))
        cause = "not a trace line"
    elif case == "not JSON":
        lines = rank0.read_text().splitlines(keepends=True)
        lines[n - 1] = lines[n - 1][: len(lines[n - 1]) // 2] + "\n"  # cut, then more lines
        rank0.write_text("".join(lines))
        cause = "not a JSON line"
    elif case == "two runs":  # ranks 0-1 of a 2-rank run next to ranks 2-3 of a 4-rank one
        for rank in (0, 1):
            shutil.copy(Path(__file__).parents[1] / "waitfor_cases" / "lazy-init-2" /
                        f"rank-{rank}.jsonl", d / f"rank-{rank}.jsonl")
        where = str(d)
        cause = ("rank files of different runs: rank-0.jsonl, rank-1.jsonl world size 2; "
                 "rank-2.jsonl, rank-3.jsonl world size 4")
    elif case == "ends not pairs":  # a hand-edited line: ends must be [[seq, how], ...]
        _edit_line(rank0, n, lambda e: e.update(ends=[["1", "dropped"]]))
        cause = "not a trace line (ends [['1', 'dropped']])"
    elif case == "rank 0 in rank-1.jsonl":
        shutil.copy(rank0, d / "rank-1.jsonl")
        where, cause = f"{d / 'rank-1.jsonl'}:1", "it holds the trace of rank 0"
    else:
        _edit_line(rank0, n, lambda e: e.update(rank=2))
        cause = "a line of rank 2 in the file of rank 0"
    with pytest.raises(InputError) as err:
        trace.read_trace_dir(d)
    assert str(err.value).startswith(f"{where}: the trace is inconsistent: ") and \
        cause in str(err.value), str(err.value)
    done = _report_of(d, tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"p2paudit report: error: {err.value}"]


def test_reader_rejects_a_directory_without_trace(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no rank-N.jsonl trace files"):
        trace.read_trace_dir(tmp_path)


# --- hooks on the real torch.distributed --------------------------------------------------------

@pytest.fixture
def recorded(tmp_path: Path):
    """This process's torch.distributed hooked into a fresh recorder, as one 1-rank gloo world."""
    assert not dist.is_initialized()
    originals = (dist.isend, c10d.all_reduce, c10d.Work.wait)
    rec = Recorder(tmp_path / "trace", hang_after=0)
    hooks.install(rec, c10d)
    try:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        yield rec
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        hooks.uninstall()
    assert (dist.isend, c10d.all_reduce, c10d.Work.wait) == originals


def ops(rec: Recorder) -> list[dict]:
    return trace.read_trace_dir(rec.directory).ranks[0].starts()


def outcome(call) -> tuple:
    try:
        return ("returned", call())
    except Exception as exc:  # gloo's message names an ephemeral port: not part of the behaviour
        return ("raised", type(exc), re.sub(r"\]:\d+", "]:PORT", str(exc)))


def test_wrappers_are_the_same_object_everywhere_and_keep_signatures(recorded) -> None:
    assert dist.isend is c10d.isend and dist.batch_isend_irecv is c10d.batch_isend_irecv
    assert dist.isend.__wrapped__ is not None
    assert list(__import__("inspect").signature(dist.isend).parameters)[:2] == ["tensor", "dst"]
    # P2POp checks its op against the module's globals: a hooked isend must still pass
    op = dist.P2POp(dist.isend, torch.ones(1), 0)
    assert op.op is c10d.isend


def test_same_results_and_exceptions_as_unhooked(tmp_path: Path) -> None:
    calls = {
        "self isend": lambda: dist.isend(torch.ones(2), dst=0).wait(),
        "send to self": lambda: dist.send(torch.ones(2), dst=0),
        "all_reduce": lambda: (lambda t: (dist.all_reduce(t), t.tolist()))(torch.ones(3)),
        "async": lambda: (lambda w: (type(w).__name__, w.wait()))(
            dist.all_reduce(torch.ones(1), async_op=True)),
        "bad batch": lambda: dist.batch_isend_irecv(["not an op"]),
    }
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        plain = {name: outcome(call) for name, call in calls.items()}
    finally:
        dist.destroy_process_group()
    rec = Recorder(tmp_path / "trace", hang_after=0)
    hooks.install(rec, c10d)
    try:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        hooked = {name: outcome(call) for name, call in calls.items()}
    finally:
        dist.destroy_process_group()
        hooks.uninstall()
    assert hooked == plain
    assert plain["self isend"][0] == plain["send to self"][0] == "raised"
    started = ops(rec)
    assert [e["api"] for e in started if e["kind"] != "setup"] == [
        "isend", "send", "all_reduce", "all_reduce"]
    assert [e["end"]["how"] for e in started if e["kind"] != "setup"] == [
        "raise", "raise", "return", "wait"]


def test_nested_call_is_one_event(recorded) -> None:
    with pytest.raises(RuntimeError):
        dist.recv(torch.ones(2), src=0)  # recv -> irecv inside torch: one op
    (op,) = [e for e in ops(recorded) if e["kind"] == "p2p"]
    assert (op["api"], op["peer"], op["end"]["how"]) == ("recv", 0, "raise")
    assert op["site"]["function"] == "test_nested_call_is_one_event"


def test_queued_collectives_are_batched_and_works_complete(recorded) -> None:
    a, b = torch.ones(2), torch.ones(3)
    with c10d._coalescing_manager(async_ops=False):
        dist.all_reduce(a)
        dist.all_reduce(b)
    dist.all_reduce(a)
    waited = dist.all_reduce(b, async_op=True)
    waited.wait()
    dropped = dist.broadcast(a, src=0, async_op=True)
    del dropped
    polled = dist.barrier(async_op=True)
    while not polled.is_completed():  # gloo finishes it on its own thread
        time.sleep(0.01)
    recorded.poll()
    coll = [e for e in ops(recorded) if e["kind"] == "collective"]
    assert [(e["api"], e["batched"], e["shape"]) for e in coll] == [
        ("all_reduce", True, [2]), ("all_reduce", True, [3]), ("all_reduce", False, [2]),
        ("all_reduce", False, [3]), ("broadcast", False, [2]), ("barrier", False, None)]
    assert [e["end"]["how"] for e in coll] == ["return", "return", "return", "wait", "dropped",
                                               "polled"]
    assert coll[0]["comm_init"] == {"kind": "group", "key": "all"}
    assert all(e["comm_init"] is None for e in coll[1:])


def test_a_dropped_work_ends_on_the_next_start_line(recorded) -> None:
    """A Work freed unwaited is learnt at the next op's start: that line carries its end (one
    line written, not two); the reader gives the end that line's seq and t, before its op."""
    import jsonschema

    schema = json.loads((FIXTURES.parent.parent / "docs/schema/trace-line.schema.json").read_text())
    a = torch.ones(2)
    first = dist.broadcast(a, src=0, async_op=True)
    second = dist.broadcast(a, src=0, async_op=True)
    first.wait()  # ended by its wait: an end line of its own
    del first, second
    dist.all_reduce(a)
    text = (recorded.directory / "rank-0.jsonl").read_bytes().rstrip(b"\0").decode()  # still open
    raw = [json.loads(line) for line in text.splitlines()]
    for line in raw:
        jsonschema.validate(line, schema)
    (carrier,) = [line for line in raw if "ends" in line]
    (dropped,) = [line for line in raw if line.get("api") == "broadcast"][1:2]
    assert carrier["api"] == "all_reduce" and carrier["ends"] == [[dropped["seq"], "dropped"]]
    assert not [line for line in raw if line["phase"] == "end" and line["of"] == dropped["seq"]]
    rt = trace.read_trace_dir(recorded.directory).ranks[0]
    coll = rt.starts("collective")
    assert [(e["api"], e["end"]["how"]) for e in coll] == [
        ("broadcast", "wait"), ("broadcast", "dropped"), ("all_reduce", "return")]
    end = coll[1]["end"]
    assert (end["seq"], end["t"], end["of"], end["api"]) == (
        carrier["seq"], carrier["t"], dropped["seq"], "broadcast")
    assert rt.head.index(end) == rt.head.index(coll[2]) - 1  # before the op whose line holds it


def test_threads_get_consecutive_seqs_and_every_op_ends(recorded) -> None:
    def work() -> None:
        for _ in range(25):
            dist.all_reduce(torch.ones(1))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rt = trace.read_trace_dir(recorded.directory).ranks[0]
    assert [e["seq"] for e in rt.head] == list(range(1, len(rt.head) + 1))
    coll = rt.starts("collective")
    assert len(coll) == 100 and all(e["end"]["how"] == "return" for e in coll)


def test_internal_failure_turns_recording_off_once(recorded, monkeypatch, capsys) -> None:
    def broken(skip: int = 2) -> tuple[str, str]:
        raise RuntimeError("simulated recorder bug")

    monkeypatch.setattr(callsite, "caller_sites", broken)  # what an op's start line calls
    t = torch.ones(2)
    dist.all_reduce(t)
    dist.all_reduce(t)
    assert t.tolist() == [1.0, 1.0]
    assert not recorded.on
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "recording stopped in this process" in err[0]
    rt = trace.read_trace_dir(recorded.directory).ranks[0]
    assert rt.head[-1]["phase"] == "off" and "simulated recorder bug" in rt.head[-1]["error"]
    assert rt.starts("collective") == []


# --- the command --------------------------------------------------------------------------------

def test_record_refuses_bad_input(tmp_path: Path, capsys) -> None:
    shutil.copytree(FIXTURES / "pipeline", tmp_path / "old")
    assert cli_main(["record", "--out", str(tmp_path / "old"), "--", "true"]) == 2
    assert cli_main(["record", "--out", str(tmp_path / "new")]) == 2
    assert cli_main(["record", "--out", str(tmp_path / "new"), "--", "/no/such/cmd"]) == 2
    assert cli_main(["record", "--coverage", "torch.distributed", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "already holds a trace (rank-0.jsonl" in err
    assert "no command to run" in err and "/no/such/cmd: cannot run" in err
    assert "cannot measure torch itself" in err


def test_a_trace_directory_that_cannot_be_made_is_bad_input(tmp_path: Path, capsys) -> None:
    """`record --trace /proc/nope` was an internal error (h-explore)."""
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert cli_main(["record", "--trace", str(blocked / "sub"), "--", "true"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot make the trace directory" in err[0]


def test_record_returns_the_command_status(tmp_path: Path) -> None:
    assert cli_main(["record", "--out", str(tmp_path / "t"), "--", "sh", "-c", "exit 3"]) == 3


def test_bootstrap_arms_the_process_and_chains_the_sitecustomize_it_shadows(tmp_path: Path) -> None:
    other = tmp_path / "site"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['CHAINED'] = 'yes'\n")
    env = record.environment(tmp_path / "trace", 300, None,
                             base={"PATH": os.environ["PATH"], "PYTHONPATH": str(other)})
    probe = ("import os, sys\n"
             "from auditor.dynamic import session\n"
             "print(os.environ.get('CHAINED'), session._recorder is not None,\n"
             "      any(p.endswith('bootstrap') for p in sys.path), 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    # chained; armed; the bootstrap directory is off sys.path again; torch not imported for it
    assert out.stdout.split() == ["yes", "True", "False", "False"]
    assert not (tmp_path / "trace").exists()  # nothing written by a process that is not a rank


def test_meta_lines_name_the_writers_without_reading_events():
    """The SIGUSR1 forwarder needs each rank's host and pid only (found in review: it used to
    parse every event of every rank at the moment a job hangs)."""
    from pathlib import Path

    from auditor.dynamic.trace import read_meta_lines

    metas = read_meta_lines(Path(__file__).parents[1] / "record_fixtures" / "pipeline")
    assert sorted(m["rank"] for m in metas) == [0, 1, 2, 3]
    assert all(isinstance(m["pid"], int) and m["host"] for m in metas)


def test_parallel_reading_is_the_same_reading(tmp_path: Path) -> None:
    """Large traces are read by worker processes: same aggregates and windows, same errors."""
    alone = trace.read_trace_dir(FIXTURES / "pipeline", jobs=1)
    together = trace.read_trace_dir(FIXTURES / "pipeline", jobs=2)
    for rank, rt in alone.ranks.items():
        other = together.ranks[rank]
        assert (rt.usage, rt.batch_calls, rt.head, rt.groups, rt.lines) == \
            (other.usage, other.batch_calls, other.head, other.groups, other.lines)
    d = tmp_path / "t"
    shutil.copytree(FIXTURES / "pipeline", d)
    shutil.copy(d / "rank-0.jsonl", d / "rank-3.jsonl")
    with pytest.raises(InputError, match="rank-3.jsonl:1: the trace is inconsistent: it holds "
                                         "the trace of rank 0"):
        trace.read_trace_dir(d, jobs=2)


def test_head_keeps_the_first_ops_and_counts_the_rest(tmp_path: Path) -> None:
    """A window of the first ops per rank (what the timeline and the replay read); the counts
    and the pending ops cover the whole file."""
    from tests.analysis.test_join import group, write_trace

    pair = group([0, 1], "pp", "1")
    site = {"path": "train.py", "line": 7, "end_line": 7, "function": "step"}
    n = 3 * rankfile.HEAD_PER_RANK
    programs = {r: [{"api": "send" if (k + r) % 2 == 0 else "recv", "kind": "p2p",
                     "batched": False, "peer": 1 - r, "group": pair, "shape": [4],
                     "dtype": "float32", "site": site} for k in range(n)] for r in (0, 1)}
    write_trace(tmp_path, programs, world=2, pending={1: n - 1})
    t = trace.read_trace_dir(tmp_path, head_ops=4)  # at least HEAD_PER_RANK per rank
    for rank, rt in t.ranks.items():
        assert not rt.complete and rt.ops == n and rt.lines == 1 + 2 * n - rank
        assert len(rt.starts()) == rankfile.HEAD_PER_RANK
        assert sum(rt.usage.values()) == n and rt.usage[next(iter(rt.usage))] in (n // 2, n - n // 2)
    assert [e["seq"] for e in t.ranks[1].pending()] == [2 * n]
    assert t.ranks[0].pending() == []


def test_mapped_file_grows_closes_exact_and_writes_through_where_mapping_fails(
        tmp_path: Path, monkeypatch) -> None:
    from auditor.dynamic import mapped as module

    line = b'{"seq":1}' + b" " * 500 + b"\n"
    fd, path = trace.rank_file(tmp_path, 0, 1)
    mapped = module.MappedFile(fd)
    for _ in range(3 * module.MappedFile.CHUNK // len(line)):  # three chunks: two remaps
        mapped.write(line)
    assert path.stat().st_size > mapped.pos  # zeros ahead until closed
    mapped.close()
    assert path.read_bytes() == line * (3 * module.MappedFile.CHUNK // len(line))

    def no_mapping(*args, **kwargs):
        raise OSError(19, "No such device")  # what mmap says on a filesystem that cannot

    monkeypatch.setattr(module.mmap, "mmap", no_mapping)
    fd, path = trace.rank_file(tmp_path, 1, 1)
    through = module.MappedFile(fd)
    through.write(line)
    through.write(line)
    assert path.read_bytes() == line * 2  # on disk at once, nothing ahead
    through.close()
    assert path.read_bytes() == line * 2
