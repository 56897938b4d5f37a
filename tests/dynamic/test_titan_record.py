"""`p2paudit record` on torchtitan's pipeline-parallel construct (issue 27 item 3): a device mesh
unflattened into ("pp", "batch") and torch's Interleaved1F1B on its "pp" group, as torchtitan
0.2.2 builds them (tests/record_fixtures/titan_mesh_interleaved.py cites the lines). Each op keeps
its site (the line that called torch) and names the line that chose it: torch's pipelining
runtime for the schedule's ops, none for the groups DeviceMesh makes (torch's wrapper around
new_group: the mesh line is the one a user acts on). The real torchtitan run is
benchmarks/bench_record_titan.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.dynamic.test_chosen_frame import record, starts
from tests.dynamic.test_trace_schema import assert_valid, lines

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = "titan_mesh_interleaved.py"
RUNTIME = "_PipelineScheduleRuntime._step_microbatches.<locals>._perform_action"


@pytest.fixture(scope="module")
def titan_run(tmp_path_factory) -> Path:
    return record(tmp_path_factory.mktemp("titan"), FIXTURE)


@pytest.mark.heavy
def test_mesh_groups_are_chosen_by_the_mesh_line_not_device_mesh(titan_run):
    groups = [s for s in starts(titan_run) if s["api"] == "new_group"]
    assert groups  # the mesh's "pp" and "batch" dimensions, on each rank
    for line in groups:
        assert line["site"]["path"] == FIXTURE
        assert "chosen" not in line, line["chosen"]


def test_interleaved_ops_name_the_pipelining_runtime_action(titan_run):
    assert assert_valid(titan_run) == len(lines(titan_run))
    ops = [s for s in starts(titan_run) if s["api"] in ("isend", "irecv")]
    assert {op["rank"] for op in ops} == {0, 1}
    for op in ops:
        assert (op["site"]["path"], op["site"]["function"]) == (FIXTURE, "main")
        assert (op["chosen"]["path"], op["chosen"]["function"]) == (
            "torch/distributed/pipelining/schedules.py", RUNTIME)


def test_a_command_that_fails_before_any_rank_says_so(tmp_path):
    """torchtitan 0.3.0 refuses PP without --training.disable_cuda_graphs while parsing its
    config, before any torch.distributed call: the summary names the command's exit status,
    not a doubt whether the run was recorded."""
    out = tmp_path / "trace"
    proc = subprocess.run([sys.executable, "-m", "auditor", "record", "--out", str(out), "--",
                           sys.executable, "-c", "import sys; sys.exit(2)"],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (f"p2paudit record: no rank wrote a trace in {out}: the command exited with "
                    "status 2 before any process called torch.distributed (its error is above)")
