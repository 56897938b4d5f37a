"""torch pipelining's shape inference under the replay (issue 23, item 3). A 3-stage Schedule1F1B
run on gloo completes, yet the replay read its send_object_list / recv_object_list as collectives
on the default group (every member must join), so rank 1's receive from rank 0 "waited for rank
2" and both the gloo model and the NCCL verdicts reported a cycle: a modelling error, not a hang.
torch 2.13.0's send_object_list sends to one peer (distributed_c10d.send_object_list: a sizes
tensor then the data, each an isend to group_dst, batched when use_batch=True, which
PipelineStage._send_meta passes), so the replay takes them as the P2P ops rules/torch.toml's
[[p2p_api]] table says they are (a send to `dst`, a receive from `src`)."""

from __future__ import annotations

import pytest
import socket
import subprocess
import sys
from pathlib import Path

from auditor.analysis.join import join
from auditor.analysis.waitfor.model import Group, Op
from auditor.dynamic.trace import read_trace_dir

DRIVER = Path(__file__).parent / "drivers" / "schedule_1f1b.py"
REPO = Path(__file__).resolve().parents[2]


def test_object_lists_are_point_to_point():
    group = Group((0, 1, 2), "default_pg")
    assert Op(1, 0, "send_object_list", group, 2).kind == "send"
    assert Op(1, 0, "recv_object_list", group, 0).kind == "recv"
    assert Op(1, 0, "barrier", group).kind == "collective"


@pytest.mark.heavy
def test_a_completed_3_stage_schedule_1f1b_reads_clean(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", str(tmp_path / "trace"), "--",
         sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "3",
         "--master_port", str(port), str(DRIVER)],
        cwd=REPO, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    trace = read_trace_dir(tmp_path / "trace")
    apis = {e["api"] for rt in trace.ranks.values() for e in rt.starts("p2p")}
    assert {"send_object_list", "recv_object_list"} <= apis  # the shape inference ran
    joined = join({"sites": [], "targets": [], "findings": [], "config": {}}, read_trace_dir(tmp_path / "trace"))
    kinds = {f["kind"] for f in joined["findings"]}
    assert not {"replay-disagrees-with-run", "replay-would-hang", "replay-can-hang"} & kinds
    assert joined["run"]["waitfor"]["hang"] is False
