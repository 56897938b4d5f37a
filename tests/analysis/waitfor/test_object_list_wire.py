"""An object-list op is what torch puts on the wire (rules/torch.toml [[p2p_api]] `wire`): a
receive of the int64 sizes, then one of the uint8 pickled bytes, each blocking. The replay pairs
each part, so a tensor send that an object-list receive takes disagrees in dtype, and an
object-list exchange against an object-list exchange still pairs part by part."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from auditor.analysis.waitfor.model import Conditions
from auditor.analysis.waitfor.programs import programs_from_events
from auditor.analysis.waitfor.replay import analyze

GROUP = {"ranks": [0, 1], "desc": "default_pg"}
SITE = {"path": "stage.py", "line": 7}


def start(seq: int, rank: int, api: str, peer: int, **tensor) -> dict:
    return {"seq": seq, "rank": rank, "api": api, "phase": "start", "kind": "p2p", "batched": False,
            "peer": peer, "group": GROUP, "site": SITE, **tensor}


def end(seq: int, of: int) -> dict:
    return {"seq": seq, "phase": "end", "of": of, "how": "return"}


def test_an_object_list_op_is_its_two_wire_ops_in_order():
    events = {0: [start(1, 0, "send_object_list", 1, shape=None, dtype=None), end(2, 1)],
              1: [start(1, 1, "recv_object_list", 0, shape=None, dtype=None), end(2, 1)]}
    programs = programs_from_events(events)
    assert [(op.api, op.dtype) for op in programs[1]] == [("recv_object_list", "int64"),
                                                          ("recv_object_list", "uint8")]
    assert programs[1][1].after == (0,)  # the bytes' receive is issued once the sizes arrived
    analysis = analyze(programs, Conditions.gloo())
    assert not analysis.hang and analysis.mismatched_pairs == []


def test_a_tensor_send_taken_by_recv_object_list_is_a_dtype_mismatch():
    events = {0: [start(1, 0, "send", 1, shape=[1], dtype="torch.int32"), end(2, 1)],
              1: [start(1, 1, "recv_object_list", 0, shape=None, dtype=None)]}
    [pair] = analyze(programs_from_events(events), Conditions.gloo()).mismatched_pairs
    assert pair["what"] == "dtype"  # the sizes' byte count is not recorded: not compared
    assert (pair["send"]["dtype"], pair["recv"]["dtype"]) == ("int32", "int64")
    assert pair["recv"]["api"] == "recv_object_list"


def test_a_real_gloo_run_whose_tensor_send_meets_recv_object_list(tmp_path):
    """tests/ppbugs/drivers/tensor_into_object_list.py recorded on gloo (torch 2.13.0): the
    report names the pair that disagrees, with both lines."""
    from auditor.analysis.join import join
    from auditor.dynamic.trace import read_trace_dir

    driver = Path(__file__).resolve().parents[2] / "ppbugs" / "drivers" / "tensor_into_object_list.py"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run([sys.executable, "-m", "auditor", "record", "--out", str(tmp_path / "t"),
                    "--hang-after", "3", "--", sys.executable, "-m", "torch.distributed.run",
                    "--nproc_per_node", "2", "--master_port", str(port), str(driver)],
                   env=dict(os.environ, GLOO_TIMEOUT="8"), capture_output=True, timeout=120,
                   check=False, cwd=Path(__file__).resolve().parents[3])
    joined = join({"sites": [], "targets": [], "findings": [], "config": {}}, read_trace_dir(tmp_path / "t"))
    [pair] = joined["run"]["waitfor"]["mismatched_pairs"]
    assert "dtype" in pair["what"]
    assert pair["send"]["site"].startswith("tensor_into_object_list.py:")
    assert pair["recv"]["site"].startswith("tensor_into_object_list.py:")
    assert "p2p-mismatch" in [f["kind"] for f in joined["findings"]]
