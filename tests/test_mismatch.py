"""A send and the receive it pairs with must agree in size and dtype (pytorch #113376): the
replay pairs them as NCCL and gloo do (in issue order per communicator) and reports a pair that
disagrees as `p2p-mismatch`, on a real 2-rank gloo run of the issue's own reproducer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.analysis import waitfor

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "benchmarks" / "ppbugs" / "cases" / "pytorch-113376" / "driver.py"
PAIR = waitfor.Group((0, 1), "pp")


def op(rank: int, api: str, peer: int, nbytes: int, dtype: str) -> waitfor.Op:
    return waitfor.Op(rank, 0, api, PAIR, peer, nbytes, dtype=dtype)


@pytest.mark.parametrize("send, recv, what", [
    ((12, "float32"), (16, "float32"), "size"),
    ((16, "int64"), (16, "float32"), "dtype"),
    ((16, "float32"), (16, "float32"), None),
    ((16, ""), (16, "float32"), None),  # a side whose dtype the trace does not say
])
def test_pairs_are_checked(send, recv, what):
    programs = {0: [op(0, "isend", 1, *send)], 1: [op(1, "irecv", 0, *recv)]}
    pairs = waitfor.analyze(programs, waitfor.Conditions.gloo()).mismatched_pairs
    assert [p["what"] for p in pairs] == ([what] if what else [])


def run(tmp_path: Path, recv_numel: int) -> tuple[int, dict]:
    trace = tmp_path / f"trace-{recv_numel}"
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", str(trace), "--", sys.executable,
         "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(DRIVER),
         str(recv_numel)], cwd=DRIVER.parent, capture_output=True, text=True, timeout=120,
        env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sites = tmp_path / "sites.json"
    subprocess.run([sys.executable, "-m", "auditor", "sites", str(DRIVER), "--format", "json",
                    "-o", str(sites)], check=True, cwd=ROOT, capture_output=True)
    done = subprocess.run([sys.executable, "-m", "auditor", "report", "--scan", str(sites),
                           "--trace", str(trace), "--format", "json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout)


def test_the_issue_reproducer_is_a_mismatch_and_equal_sizes_are_not(tmp_path):
    code, doc = run(tmp_path, 4)
    found = [f for f in doc["findings"] if f["kind"] == "p2p-mismatch"]
    assert code == 1 and found and found[0]["severity"] == "error"
    (pair,) = found[0]["detail"]["pairs"]
    assert (pair["send"]["bytes"], pair["recv"]["bytes"]) == (12, 16)
    lines = DRIVER.read_text().splitlines()
    send_line = next(n for n, t in enumerate(lines, 1) if "dist.isend" in t)
    recv_line = next(n for n, t in enumerate(lines, 1) if "dist.irecv" in t)
    assert pair["send"]["site"] == f"driver.py:{send_line}"
    assert pair["recv"]["site"] == f"driver.py:{recv_line}"
    code, doc = run(tmp_path, 3)
    assert code == 0 and not [f for f in doc["findings"] if f["kind"] == "p2p-mismatch"]
