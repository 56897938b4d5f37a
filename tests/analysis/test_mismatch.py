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

from auditor import rulebook
from auditor.analysis.runreplay import p2p_roles
from auditor.analysis.replayverdict import prediction_verdict
from auditor.analysis.waitfor.deadlock import deadlock
from auditor.analysis.waitfor.model import Conditions, Group, Op
from auditor.analysis.waitfor.replay import analyze

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "benchmarks" / "ppbugs" / "cases" / "pytorch-113376" / "driver.py"
PAIR = Group((0, 1), "pp")


def op(rank: int, api: str, peer: int, nbytes: int, dtype: str) -> Op:
    return Op(rank, 0, api, PAIR, peer, nbytes, dtype=dtype)


@pytest.mark.parametrize("send, recv, what", [
    ((12, "float32"), (16, "float32"), "size"),
    ((16, "int64"), (16, "float32"), "dtype"),
    ((16, "float32"), (16, "float32"), None),
    ((16, ""), (16, "float32"), None),  # a side whose dtype the trace does not say
])
def test_pairs_are_checked(send, recv, what):
    programs = {0: [op(0, "isend", 1, *send)], 1: [op(1, "irecv", 0, *recv)]}
    pairs = analyze(programs, Conditions.gloo()).mismatched_pairs
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


@pytest.mark.heavy
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


# --- roles: a send to `next` is received as from `prev` (Megatron-LM #1450) -----------------------

def test_roles_pair_send_next_with_recv_prev():
    def role_op(rank: int, index: int, api: str, peer: int, role: str) -> Op:
        return Op(rank, index, api, PAIR, peer, 24, dtype="int64", role=role)
    # #1450 at PP=2: each rank's one batch sends to prev and next, which are the same rank.
    buggy = {r: [role_op(r, 0, "isend", 1 - r, "prev"), role_op(r, 1, "irecv", 1 - r, "prev"),
                 role_op(r, 2, "isend", 1 - r, "next"), role_op(r, 3, "irecv", 1 - r, "next")]
             for r in (0, 1)}
    pairs = analyze(buggy, Conditions.gloo()).mismatched_pairs
    assert len(pairs) == 4 and {p["what"] for p in pairs} == {"role"}
    # The order of the proposed fix: the receives that pair come first on the other side.
    fixed = {0: [role_op(0, 0, "isend", 1, "next"), role_op(0, 1, "irecv", 1, "next")],
             1: [role_op(1, 0, "irecv", 0, "prev"), role_op(1, 1, "isend", 0, "prev")]}
    assert analyze(fixed, Conditions.gloo()).mismatched_pairs == []


RULE = rulebook.load("megatron-core").section("p2p_roles")


@pytest.mark.parametrize("peer", RULE["valid"])
def test_role_pattern_valid(peer):
    assert p2p_roles([{"api": "P2POp", "peer": peer, "path": "p.py", "line": 1}]) == \
        {("p.py", 1): "next" if "next" in peer else "prev"}


@pytest.mark.parametrize("peer", RULE["invalid"])
def test_role_pattern_invalid(peer):
    assert p2p_roles([{"api": "P2POp", "peer": peer, "path": "p.py", "line": 1}]) == {}


@pytest.mark.wheels
def test_every_pipeline_p2pop_of_the_release_has_a_role(real_sources):
    from auditor.static.inventory import inventory
    sites = [s.to_json() for s in inventory(real_sources["megatron-core"]).sites]
    roles = p2p_roles(sites)
    pipeline = [s for s in sites if s["api"] == "P2POp"
                and s["path"] == "megatron/core/pipeline_parallel/p2p_communication.py"]
    assert len(pipeline) == 8 and all((s["path"], s["line"]) in roles for s in pipeline)
    assert sorted(roles[(s["path"], s["line"])] for s in pipeline) == ["next"] * 4 + ["prev"] * 4


@pytest.mark.parametrize("recv, status", [((12, "float32"), "findings"), ((16, "float32"), "clean")])
def test_a_prediction_with_a_mismatched_pair_is_never_clean(recv, status):
    """INVALID for clean: an order that completes but pairs a 16-byte send with a 12-byte receive
    is a finding in repro --predict's verdict, as in simulate's; VALID: the pair agreeing."""
    programs = {0: [op(0, "isend", 1, 16, "float32")], 1: [op(1, "irecv", 0, *recv)]}
    conditions = Conditions.for_transport("nvlink")
    pairs = analyze(programs, conditions).mismatched_pairs
    verdicts = deadlock(lambda c: analyze(programs, c), conditions).to_json()
    decided = prediction_verdict(verdicts, pairs)
    assert decided.status == status, decided.headline
    assert decided.headline.startswith("MISMATCH: 1 send/receive pair(s) disagree in size") is (status == "findings")
