"""A trace cut where the recorder stopped (`ulimit -f`, a full disk) is evidence only as far as
every rank recorded it.

Before: each rank file of a batch_isend_irecv ring (pair_batches.py) cut under `ulimit -f 20`
ended on an ISEND start, its IRECV never written, then the `off` line; the wait-for replay took
each file's end for the rank waiting there and `report` said DEADLOCK (a 24 KiB tmpfs, cutting
the ranks at different lines, read as FINDINGS p2p-count-mismatch). Now neither the replay's
cycle nor its count check speaks past the shortest common recorded prefix: INCONCLUSIVE, the
trace incomplete, naming each rank and the line it stopped at. A send/receive pair both sides
recorded is still judged (a dtype mismatch stays FINDINGS).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import cli
from auditor.errors import EXIT_FINDINGS

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
JOB = HERE / "pair_batches.py"
REPLAY = ("wait-for-cycle", "p2p-count-mismatch", "run-stopped-in-op")
LIMIT = "recording stopped: the file size limit (ulimit -f)"


def rank_lines(rank: int, steps: int, recv_dtype: str = "float32") -> list[dict]:
    """Rank `rank`'s lines of pair_batches.py: each step an ISEND to the other rank and an IRECV
    from it, started as one batch, then each waited."""
    group = {"ranks": [0, 1], "size": 2, "desc": "default_pg", "name": "0", "backend": "gloo",
             "eager": False}
    site = {"path": "pair_batches.py", "line": 21, "end_line": 22, "function": "<module>"}
    lines: list[dict] = [
        {"api": "process", "phase": "meta", "pid": 10 + rank, "host": "vm",
         "argv": ["pair_batches.py"], "python": "3.11.7", "torch": "2.13.0+cpu",
         "recorder": "p2paudit 0.1.0", "hang_after": 300.0, "mono0": 1.0,
         "wall0": 1796430967.0, "world_size": 2},
        {"api": "init_process_group", "phase": "start", "kind": "setup", "site": site,
         "backend": "gloo", "device_id": None},
        {"api": "group", "phase": "group", "group": group},
        {"api": "init_process_group", "phase": "end", "of": 1, "how": "return", "world_size": 2}]
    for step in range(steps):
        first = len(lines)
        for api, dtype in (("isend", "float32"), ("irecv", recv_dtype)):
            lines.append({"api": api, "phase": "start", "kind": "p2p", "batched": False,
                          "peer": 1 - rank, "group": "0", "site": site, "shape": [4],
                          "dtype": dtype if step == 0 else "float32", "via": "batch_isend_irecv",
                          "batch": step + 1, "op_site": site})
        lines += [{"api": api, "phase": "end", "of": first + i, "how": "wait"}
                  for i, api in enumerate(("isend", "irecv"))]
    return [{"seq": seq, "t": seq / 1000, "rank": rank, **line} for seq, line in enumerate(lines)]


def cut_trace(root: Path, cuts: tuple[int, int], recv_dtype: str = "float32",
              error: str = LIMIT, reason: str = "file size limit") -> Path:
    """Both ranks' files of a 40-step run, rank r's cut after its first cuts[r] lines and ended
    by the recorder's `off` line, as the writer leaves a file at its size limit."""
    root.mkdir()
    for rank, keep in enumerate(cuts):
        lines = rank_lines(rank, 40, recv_dtype if rank == 1 else "float32")[:keep]
        lines.append({"seq": keep + 1, "t": 1.0, "rank": rank, "api": "recorder", "phase": "off",
                      "error": error, "reason": reason})
        (root / f"rank-{rank}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def report(trace: Path, out: Path) -> tuple[int, dict]:
    code = cli.main(["report", "--trace", str(trace), "--format", "json", "-o", str(out)])
    return code, json.loads(out.read_text())


# 5 + 4k lines end on an ISEND start (the IRECV of its batch never written)
@pytest.mark.parametrize("cuts", [(5, 5), (77, 77), (5 + 4 * 20, 5 + 4 * 20), (19, 58),
                                  (58, 19), (6, 45)])
def test_a_cut_trace_is_incomplete_not_a_deadlock(tmp_path: Path, cuts: tuple[int, int]) -> None:
    code, joined = report(cut_trace(tmp_path / "trace", cuts), tmp_path / "out.json")
    head = joined["verdict"]["headline"]
    assert code == EXIT_FINDINGS and head.startswith("INCONCLUSIVE"), head
    assert "incomplete" in head and "DEADLOCK" not in head and "HANG" not in head
    for rank, keep in enumerate(cuts):
        assert f"rank {rank} at rank-{rank}.jsonl:{keep + 1}" in head, head
    assert "ulimit -f unlimited" in head
    assert not [f["kind"] for f in joined["findings"] if f["kind"] in REPLAY]
    wf = joined["run"]["waitfor"]
    assert wf["hang"] is None and wf["cycle"] == "" and wf["count_mismatches"] == []
    # nor can or will the cut order deadlock: no verdict on it beside "recording stopped"
    assert "deadlock" not in wf and "deadlock" not in joined["verdict"]
    assert wf["recording_stopped"] == {str(r): f"rank-{r}.jsonl:{k + 1}" for r, k in enumerate(cuts)}
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs/schema/scan-document.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(joined)


def test_a_pair_both_ranks_recorded_is_still_judged(tmp_path: Path) -> None:
    """Rank 1's first IRECV takes float16 what rank 0 sends as float32: both lines are in the
    recorded prefix of both ranks, so the mismatch holds however the files end."""
    code, joined = report(cut_trace(tmp_path / "trace", (19, 58), "float16"), tmp_path / "o.json")
    assert code == EXIT_FINDINGS, joined["verdict"]["headline"]
    kinds = [f["kind"] for f in joined["findings"] if f["severity"] == "error"]
    assert "p2p-mismatch" in kinds and not set(kinds) & set(REPLAY), kinds


@pytest.mark.parametrize("error, reason, decide", [
    # an internal error whose message names a full disk and a file size limit it never met (a
    # trace folder so named): nothing but fixing the error records the run whole
    ("OSError: cannot write /scratch/disk full/ulimit -f/rank-0.jsonl", "internal error",
     "fix the recorder error the trace names"),
    # the reason decides, however the error is worded
    ("recording stopped: RLIMIT_FSIZE", "file size limit", "`ulimit -f unlimited`"),
    ("recording stopped: ENOSPC", "disk full", "a filesystem with room")])
def test_the_stop_reason_decides_what_records_the_run_again(tmp_path, error, reason, decide):
    """The `off` line's `reason` (trace-line schema) names what stopped the recorder; its `error`
    is free text. Before, `decide` was read from the text: the internal error above was told to
    record again without `ulimit -f` on a disk with room, and a reworded limit to fix an error."""
    code, joined = report(cut_trace(tmp_path / "trace", (19, 19), error=error, reason=reason),
                          tmp_path / "out.json")
    [stopped] = [u for u in joined["verdict"]["undecided"] if "trace is incomplete" in u["what"]]
    assert decide in stopped["decide"] and error in stopped["what"], stopped
    assert len([w for w in ("fix the recorder", "ulimit -f", "with room") if w in stopped["decide"]]) == 1


# 40 and 64 KiB read right before too (heavy): CI keeps the three that read DEADLOCK, and
# test_recorder_diskfull.py's 64 KiB limit on another job
@pytest.mark.parametrize("kib", [20, 24, pytest.param(40, marks=pytest.mark.heavy),
                                 pytest.param(64, marks=pytest.mark.heavy), 100])
def test_a_real_run_under_a_file_size_limit_reads_incomplete(tmp_path: Path, kib: int) -> None:
    """`( ulimit -f KIB; p2paudit record -- torchrun pair_batches.py )`, then `report`: 20, 24
    and 100 KiB read DEADLOCK before (the files cut mid-batch), 40 and 64 read right."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, resource.RLIM_INFINITY))

    out = tmp_path / "trace"
    done = subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", str(out), "--", sys.executable,
         "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(JOB)],
        env=dict(os.environ, STEPS="400", PYTHONPATH=str(REPO)), cwd=REPO, capture_output=True,
        text=True, timeout=300, preexec_fn=limit)
    assert done.returncode == 0 and done.stdout.count(": done") == 2, done.stdout + done.stderr
    for rank in (0, 1):
        stop = json.loads((out / f"rank-{rank}.jsonl").read_text().splitlines()[-1])
        assert stop["phase"] == "off" and stop["reason"] == "file size limit", stop
        assert stop["error"] == LIMIT
    code, joined = report(out, tmp_path / "report.json")
    head = joined["verdict"]["headline"]
    assert code == EXIT_FINDINGS and head.startswith("INCONCLUSIVE"), head
    assert "incomplete" in head and "rank 0 at rank-0.jsonl:" in head and "rank 1 at" in head
    assert not [f["kind"] for f in joined["findings"] if f["kind"] in REPLAY]


def test_an_earlier_recorders_file_size_stop_keeps_its_step(tmp_path: Path) -> None:
    """Recorders before e1960c0 wrote reason "disk full" beside the file size limit's error
    (review r42-reliab): the step is still to lift the limit, not to free disk space."""
    root = cut_trace(tmp_path / "trace", (19, 58))
    for rank in (0, 1):
        path = root / f"rank-{rank}.jsonl"
        path.write_text(path.read_text().replace('"reason": "file size limit"', '"reason": "disk full"'))
    code, joined = report(root, tmp_path / "out.json")
    head = joined["verdict"]["headline"]
    assert code == EXIT_FINDINGS and "ulimit -f unlimited" in head and "df -h" not in head, head
