"""`p2paudit record` on real torch.distributed: 4 gloo processes under torchrun.

The toy pipeline (record_fixtures/toy_pipeline.py) is recorded through the CLI and through
P2PAUDIT_TRACE alone; every rank's ops are compared, in order, with what the script issues:
sites, batched flags (gloo runs batch_isend_irecv op by op: false, with the batch it came from),
peers, groups, communicator-creation marks, how each op completed. Then a rank SIGKILLs itself,
and ranks hang in recv until hang files, SIGUSR1 and SIGTERM have been exercised.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import coverage
import pytest
import torch.distributed as dist

from auditor.dynamic import rankfile, trace

HERE = Path(__file__).resolve().parents[1]
TOY = HERE / "record_fixtures" / "toy_pipeline.py"
FIXTURES = HERE / "record_fixtures"
REPO = HERE.parent
WORLD = 4
STEPS = 2


def site_lines() -> dict[str, int]:
    lines = {}
    for number, text in enumerate(TOY.read_text().splitlines(), 1):
        if "# SITE: " in text:
            lines[text.split("# SITE: ")[1].strip()] = number
    return lines


def expected_ops(rank: int) -> list[tuple]:
    """What toy_pipeline.py issues on `rank`: (api, batched, peer, group desc, group size, site,
    P2POp site, via, batch, comm_init key, how it ended), in order."""
    prev = rank - 1 if rank > 0 else None
    nxt = rank + 1 if rank < WORLD - 1 else None
    created: set[tuple] = set()

    def pair(group: str, a: int, b: int) -> str | None:
        key = (group, min(a, b), max(a, b))
        if key in created:
            return None
        created.add(key)
        return f"{key[1]}:{key[2]}"

    def whole(group: str) -> str | None:
        if (group,) in created:
            return None
        created.add((group,))
        return "all"

    ops: list[tuple] = []
    for step in range(STEPS):
        batch = step + 1
        if nxt is not None:
            ops.append(("isend", False, nxt, "pp", 4, "batch", "p2pop-isend", "batch_isend_irecv",
                        batch, pair("pp", rank, nxt), "wait"))
        if prev is not None:
            ops.append(("irecv", False, prev, "pp", 4, "batch", "p2pop-irecv", "batch_isend_irecv",
                        batch, pair("pp", rank, prev), "wait"))
        if prev is not None:
            ops.append(("recv", False, prev, "pp", 4, "recv-activation", None, None, None,
                        pair("pp", rank, prev), "return"))
        if nxt is not None:
            ops.append(("send", False, nxt, "pp", 4, "send-activation", None, None, None,
                        pair("pp", rank, nxt), "return"))
            ops.append(("irecv", False, nxt, "pp", 4, "irecv-grad", None, None, None,
                        pair("pp", rank, nxt), "wait"))
        if prev is not None:
            ops.append(("isend", False, prev, "pp", 4, "isend-grad", None, None, None,
                        pair("pp", rank, prev), "wait"))
        ops.append(("all_reduce", False, None, "default_pg", 4, "all-reduce", None, None, None,
                    whole("default_pg"), "return"))
    if rank == 2:
        ops.append(("isend", False, 3, "tail", 2, "tail-isend", None, None, None,
                    pair("tail", 0, 1), "wait"))
    if rank == 3:
        ops.append(("irecv", False, 2, "tail", 2, "tail-irecv", None, None, None,
                    pair("tail", 0, 1), "wait"))
    ops.append(("barrier", False, None, "default_pg", 4, "barrier", None, None, None,
                whole("default_pg"), "return"))
    return ops


def observed_ops(rt: rankfile.RankTrace) -> list[tuple]:
    """The same tuple for each recorded op, in seq order."""
    lines = {number: name for name, number in site_lines().items()}
    return [(
        e["api"], e["batched"], e["peer"], e["group"]["desc"], e["group"]["size"],
        lines.get(e["site"]["line"]), lines.get(e["op_site"]["line"]) if e["op_site"] else None,
        e["via"], e["batch"], e["comm_init"]["key"] if e["comm_init"] else None,
        e["end"]["how"] if e["end"] else None,
    ) for e in rt.starts() if e["kind"] in ("p2p", "collective")]


def toy_command() -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc_per_node", str(WORLD), str(TOY)]


def record(out: Path, *options: str, env: dict[str, str] | None = None,
           **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "auditor", "record", "--out", str(out), *options, "--",
         *toy_command()],
        env=env if env is not None else os.environ.copy(), cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def assert_pipeline_trace(t: trace.Trace) -> None:
    assert sorted(t.ranks) == list(range(WORLD)) and t.world_size == WORLD
    assert t.missing == [] and t.skipped == []
    for rank, rt in t.ranks.items():
        assert rt.meta["rank"] == rank and rt.meta["phase"] == "meta"
        assert [e["api"] for e in rt.starts("setup")] == [
            "init_process_group", "new_group", "new_group"]
        assert observed_ops(rt) == expected_ops(rank)
        assert rt.pending() == []
        seqs = [e["seq"] for e in rt.head]
        assert seqs == list(range(1, len(seqs) + 1))
        assert all(e["site"]["path"] == "toy_pipeline.py" and e["site"]["function"]
                   for e in rt.starts())


@pytest.mark.heavy
def test_record_cli_pipeline_with_coverage(tmp_path: Path) -> None:
    """Through the CLI, the script run as a module (`torchrun -m`) so --coverage can name it."""
    out = tmp_path / "trace"
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor", "record", "--out", str(out), "--coverage",
         "toy_pipeline", "--", sys.executable, "-m", "torch.distributed.run", "--standalone",
         "--nproc_per_node", str(WORLD), "-m", "toy_pipeline"],
        cwd=FIXTURES, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, output
    assert_pipeline_trace(trace.read_trace_dir(out))
    assert f"{WORLD} rank(s) traced" in output
    data = coverage.CoverageData(str(out / ".coverage"))
    data.read()
    assert data.measured_contexts() == {f"rank-{r}" for r in range(WORLD)}
    by_line = data.contexts_by_lineno(str(TOY))
    lines = site_lines()
    assert set(by_line[lines["recv-activation"]]) == {"rank-1", "rank-2", "rank-3"}
    assert set(by_line[lines["send-activation"]]) == {"rank-0", "rank-1", "rank-2"}
    assert set(by_line[lines["tail-isend"]]) == {"rank-2"}


@pytest.mark.heavy
def test_record_env_var_alone(tmp_path: Path) -> None:
    """P2PAUDIT_TRACE and nothing else: the autostart .pth (as installed with p2paudit) arms
    every process. Here a user site directory plays site-packages: p2paudit's path entry (what
    an install puts there, sorting before the autostart file) and the autostart .pth."""
    env = os.environ.copy()
    env["PYTHONUSERBASE"] = str(tmp_path / "userbase")
    user_site = subprocess.run(
        [sys.executable, "-c", "import site; print(site.getusersitepackages())"],
        env=env, capture_output=True, text=True, check=True).stdout.strip()
    Path(user_site).mkdir(parents=True)
    (Path(user_site) / "_p2paudit-src.pth").write_text(f"{REPO}\n")
    shutil.copy(REPO / "auditor/dynamic/bootstrap/p2paudit-autostart.pth", user_site)
    env["P2PAUDIT_TRACE"] = str(tmp_path / "trace")
    proc = subprocess.run(toy_command(), env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert_pipeline_trace(trace.read_trace_dir(tmp_path / "trace"))


@pytest.mark.heavy
def test_sigkill_mid_run_leaves_a_readable_trace(tmp_path: Path) -> None:
    env = dict(os.environ, TOY_KILL="2")
    proc = record(tmp_path / "trace", "--hang-after", "30", env=env)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0
    t = trace.read_trace_dir(tmp_path / "trace")
    assert sorted(t.ranks) == list(range(WORLD))
    killed = observed_ops(t.ranks[2])
    # Rank 2 died right after its first recv returned: the batch and that recv, all complete.
    assert killed == expected_ops(2)[:3]
    assert t.ranks[2].pending() == [] and t.ranks[2].hang is None
    # The others stopped somewhere along their own script; whatever they had issued towards
    # rank 2 after its death never completed normally.
    for rank in (0, 1, 3):
        ops = observed_ops(t.ranks[rank])
        expected = expected_ops(rank)[:len(ops)]
        assert [op[:-1] for op in ops] == [op[:-1] for op in expected]
    rank3 = [e for e in t.ranks[3].starts("p2p") if e["peer"] == 2 and e["api"] == "recv"]
    assert all(e["end"] is None or e["end"]["how"] == "raise" for e in rank3)


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def hang_reason(out: Path, rank: int) -> str | None:
    try:
        return json.loads(trace.hang_file(out, rank).read_text())["reason"]
    except (OSError, ValueError):
        return None


@pytest.mark.heavy
def test_forced_hang_then_sigusr1_then_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "trace"
    lines = site_lines()
    env = dict(os.environ, TOY_SLEEP="120")  # rank 0 sleeps; ranks 1-3 block in recv
    proc = record(out, "--hang-after", "1", env=env)
    try:
        wait_for(lambda: all(hang_reason(out, r) for r in (1, 2, 3)), 90, "hang files")
        for rank in (1, 2, 3):
            report = json.loads(trace.hang_file(out, rank).read_text())
            assert "pending" in report["reason"] and "--hang-after 1 s" in report["reason"]
            (op,) = report["pending"]
            assert (op["api"], op["peer"], op["group"]["desc"]) == ("recv", rank - 1, "pp")
            assert op["site"]["line"] == lines["recv-activation"]
            assert op["state"] == "inside the call" and op["age_s"] >= 1
            stacks = {s["thread"]: s["stack"] for s in report["threads"]}
            assert "p2paudit-watchdog" in stacks
            main = stacks["MainThread"]
            assert any(f["function"] == "forward" and f["line"] == lines["recv-activation"]
                       for f in main)
            assert report["last_completed"]["1"]["api"] in ("isend", "irecv")
        assert hang_reason(out, 0) is None  # rank 0 sleeps in Python: nothing pending

        proc.send_signal(signal.SIGUSR1)  # the launcher passes it to every rank of this host
        wait_for(lambda: all(hang_reason(out, r) == "SIGUSR1" for r in range(WORLD)), 30,
                 "SIGUSR1 dumps")
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # the ranks are blocked in C++; they still dump and die
        output, _ = proc.communicate(timeout=60)
        assert time.monotonic() - sent < 30
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert all(hang_reason(out, r) == "SIGTERM" for r in range(WORLD)), output
    t = trace.read_trace_dir(out)
    assert [e["api"] for e in t.ranks[1].pending()] == ["recv"]
    assert t.ranks[1].hang["pending"][0]["seq"] == t.ranks[1].pending()[0]["seq"]


def test_gloo_does_not_coalesce() -> None:
    """The oracle behind `batched: false` above: torch's batch_isend_irecv coalesces only where
    the backend supports it, and gloo does not."""
    assert "supports_coalescing" in dir(dist.ProcessGroupGloo)
    store = dist.HashStore()
    backend = dist.ProcessGroupGloo(store, 0, 1)
    assert backend.supports_coalescing is False


@pytest.mark.parametrize("name", ["pipeline", "killed", "hang", "damaged"])
def test_committed_fixtures_read_back(name: str) -> None:
    """The small traces other stages test against (record_fixtures/regenerate.py makes them)."""
    t = trace.read_trace_dir(FIXTURES / name)
    if name == "pipeline":
        assert_pipeline_trace(t)
    elif name == "killed":
        assert sorted(t.ranks) == list(range(WORLD))
        assert observed_ops(t.ranks[2]) == expected_ops(2)[:3]
    elif name == "hang":
        assert all(t.ranks[r].hang["reason"] == "SIGTERM" for r in range(WORLD))
        pending = t.ranks[1].pending()
        assert [e["site"]["line"] for e in pending] == [site_lines()["recv-activation"]]
    else:
        assert sorted(t.ranks) == [0, 1, 2] and t.missing == [3] and t.world_size == WORLD
        (cut,) = [s for s in t.skipped if s.startswith("rank-1.jsonl:")]
        assert "truncated last line" in cut
        assert any("rank 3: no trace file" in s for s in t.skipped)
        # Rank 1 lost only the line that was cut: the barrier's end, so the barrier is pending.
        *before, barrier = expected_ops(1)
        assert observed_ops(t.ranks[1]) == [*before, (*barrier[:-1], None)]
        assert [e["api"] for e in t.ranks[1].pending()] == ["barrier"]


# --- a run that completed is not a deadlock (issue 9) ---------------------------------------------
def record_exchange(out: Path, floats: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", str(out), "--",
         sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(FIXTURES / "exchange.py")],
        env=dict(os.environ, EXCHANGE_FLOATS=str(floats)), cwd=REPO, capture_output=True,
        text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def report(tmp_path: Path, trace_dir: Path, *options: str,
           config: dict | None = None) -> tuple[int, dict, str]:
    scan = tmp_path / "scan.json"
    scan.write_text(json.dumps({"sites": [], "targets": [], "findings": [], "config": config or {}}))
    out = tmp_path / "joined.json"
    done = subprocess.run(
        [sys.executable, "-m", "auditor", "report", "--scan", str(scan), "--trace",
         str(trace_dir), "--format", "json", "-o", str(out), *options],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(out.read_text()) if out.exists() else {}, done.stderr


@pytest.mark.heavy
@pytest.mark.parametrize("floats", [4, 4 << 20])
def test_completed_gloo_exchange_is_no_deadlock(tmp_path: Path, floats: int) -> None:
    """gloo ran the batch op by op and completed it (every op has an end line): the replay under
    gloo's own model completes too; what NCCL over the network would do is a warning at most."""
    record_exchange(tmp_path / "trace", floats)
    t = trace.read_trace_dir(tmp_path / "trace")
    starts = [(e["api"], e["batched"], e["via"]) for e in t.ranks[0].starts("p2p")]
    assert starts == [("isend", False, "batch_isend_irecv"), ("irecv", False, "batch_isend_irecv"),
                      ("send", False, None)]
    assert all(rt.pending() == [] for rt in t.ranks.values())
    status, joined, stderr = report(tmp_path, tmp_path / "trace")
    wf = joined["run"]["waitfor"]
    assert wf["conditions"]["backend"] == "gloo" and wf["run_completed"] is True
    assert wf["hang"] is False and wf["cycle"] == ""
    kinds = {f["kind"]: f for f in joined["findings"]}
    assert not {"wait-for-cycle", "replay-disagrees-with-run"} & set(kinds)
    assert all(f["severity"] != "error" for f in joined["findings"]), joined["findings"]
    # An inventory joined with a completed run: clean about the run, and says the sources were
    # not scanned.
    assert joined["verdict"]["status"] == "clean" and status == 0
    assert "Deadlock" not in stderr and "not scanned" in joined["verdict"]["headline"]
    # On NCCL, torch 2.13.0 (the recording's) coalesces the batch (rules/torch.toml): the
    # NCCL questions replay it as one group, which cannot deadlock (issue 23 item 1).
    dl = joined["run"]["waitfor"]["deadlock"]
    assert dl["can_deadlock"] is False and dl["will_deadlock"] is False
    # Where the scan says torch runs it op by op (DETAIL on torch 2.10), both ranks send first:
    # under the zero-buffer contract this order can deadlock at any size. 16 B completes over
    # either network transport; 16 MiB over NCCL's network (NET/Socket: measured to hang;
    # NET/IB: between its derived bounds) is open. The run did not hang: a conditional warning.
    status, joined, stderr = report(tmp_path, tmp_path / "trace",
                                    config={"effective": {"torch_batch_coalesces": False}})
    kinds = {f["kind"]: f for f in joined["findings"]}
    dl = joined["run"]["waitfor"]["deadlock"]
    assert dl["can_deadlock"] is True and dl["transport"] == "net"
    assert dl["will_deadlock"] is (None if floats > 4 else False)
    assert joined["verdict"]["deadlock"] == dl
    can = kinds.get("replay-can-hang")
    if floats > 4:
        assert can and can["severity"] == "warning", joined["findings"]
        assert "every recorded op completed; this order deadlocks when no send is buffered" \
               in can["message"]
        assert "ISEND to 1 (16 MiB)" in can["message"] and "NET/IB" in can["message"]
    else:
        assert can is None
    assert "replay-would-hang" not in kinds
    # Asked outright for the socket transport: it will hang there, still never an error.
    status, joined, stderr = report(tmp_path, tmp_path / "trace", "--transport", "net-socket",
                                    config={"effective": {"torch_batch_coalesces": False}})
    assert joined["run"]["waitfor"]["hang"] is (floats > 4)
    assert all(f["severity"] != "error" for f in joined["findings"]) and status == 0
    would = {f["kind"]: f for f in joined["findings"]}.get("replay-would-hang")
    assert (would is not None) is (floats > 4)
    if would:
        assert "under NCCL over NET/Socket this order would hang" in would["message"]
        assert "16 MiB > the 12 MiB the net-socket transport buffers" in would["message"]
    assert ("this order would hang" in joined["verdict"]["headline"]) is (floats > 4)
