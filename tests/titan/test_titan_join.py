"""A recorded torchtitan-style run joined with a scan of its own package: the lines of a
scanned target that issued ops are the scan's misses, never "outside the scanned sources", also
when the scan found no P2P site in that target (torch's frames are skipped, so the schedule's
ops are named by the trainer's `self.pp_schedule.step(...)` line, which no inventory lists).

`titanlike/train.py` below reproduces torchtitan's train step (pytorch/torchtitan v0.2.2
73a0e697, torchtitan/train.py:481-516, Trainer.forward_backward_step: `self.pp_schedule.step(
inputs, target=..., losses=...)` on the first stage, `self.pp_schedule.step(target=...,
losses=...)` on the others) over torch's Schedule1F1B, recorded by `p2paudit record` on 2 gloo
ranks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import sources
from auditor.analysis.join import join
from auditor.dynamic.trace import read_trace_dir
from auditor.report import document
from auditor.scan import ScanInputs, run_scan
from auditor.static.inventory import inventory
from tests.titan.test_titan_scan import RUN_TRAIN_022
from tests.titan.test_titan_scan_decided import LLAMA3_8B_TOML

ROOT = Path(__file__).resolve().parents[2]
TRAIN = '''\
import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B


class Trainer:
    def __init__(self):
        rank, world = dist.get_rank(), dist.get_world_size()
        self.pp_has_first_stage, self.pp_has_last_stage = rank == 0, rank == world - 1
        stage = PipelineStage(nn.Linear(8, 8), rank, world, torch.device("cpu"))
        self.pp_schedule = Schedule1F1B(stage, n_microbatches=2,
                                        loss_fn=lambda out, target: (out - target).pow(2).mean())

    def forward_backward_step(self, inputs, labels):
        targets, losses = (labels, []) if self.pp_has_last_stage else (None, None)
        if self.pp_has_first_stage:
            self.pp_schedule.step(inputs, target=targets, losses=losses)
        else:
            self.pp_schedule.step(target=targets, losses=losses)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    batch = torch.ones(4, 8)
    Trainer().forward_backward_step(batch, torch.zeros_like(batch))
    peer_op = getattr(dist, "send" if dist.get_rank() == 0 else "recv")  # named at run time
    peer_op(torch.ones(1), 1 - dist.get_rank())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, Path]:
    here = tmp_path_factory.mktemp("titanlike")
    (here / "titanlike").mkdir()
    (here / "titanlike/__init__.py").write_text("")
    (here / "titanlike/train.py").write_text(TRAIN)
    out = here / "trace"
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", str(out), "--", sys.executable, "-m",
         "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "titanlike.train"],
        cwd=here, capture_output=True, text=True, timeout=240,
        env=dict(os.environ, PYTHONPATH=f"{here}{os.pathsep}{ROOT}"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return here / "titanlike", out


def _joined(trace: Path, *targets) -> dict:
    srcs = [sources.resolve(str(t)) for t in targets]
    invs = [inventory(src, jobs=0) for src in srcs]
    return join(document.build(srcs, [s.to_json() for i in invs for s in i.sites], [i.analysis for i in invs]),
                read_trace_dir(trace))


def _misses(joined: dict, function: str) -> list[dict]:
    return [m for m in joined["run"]["misses"] if (m["path"], m["function"]) == ("titanlike/train.py", function)]


@pytest.mark.heavy
def test_a_fired_line_of_a_target_with_no_site_is_a_static_miss(recorded):
    """The P2P call the inventory cannot see (its API named at run time) is the target's own:
    a static miss, not code outside the scan, though the scan found no site at all."""
    package, trace = recorded
    assert inventory(sources.resolve(str(package)), jobs=0).sites == []
    joined = _joined(trace, package)
    hidden = _misses(joined, "main")
    assert hidden and all(m["in_targets"] and "outside" not in m["why"] and "chosen" not in m
                          for m in hidden), hidden
    miss = next(f for f in joined["findings"] if f["kind"] == "static-miss")
    assert "titanlike/train.py" in miss["message"] and "forward_backward_step" not in miss["message"]


def test_the_schedule_s_ops_are_judged_where_torch_chose_them(recorded):
    """The trainer's step line is in the scan, but torch's schedule chose its ops: with torch
    not scanned, the code to scan is torch's, named; the line itself is not called outside."""
    package, trace = recorded
    joined = _joined(trace, package)
    steps = _misses(joined, "Trainer.forward_backward_step")
    outside = next(f for f in joined["findings"] if f["kind"] == "unscanned-p2p")
    assert "chosen at torch/distributed/pipelining/" in outside["message"]
    assert steps and all(not m["in_targets"] and m["chosen"].startswith("torch/distributed/pipelining/")
                         and "this line is in them" in m["why"] for m in steps), steps


@pytest.mark.wheels
def test_the_schedule_s_ops_are_predicted_by_torch_s_reached_sites(recorded, tmp_path):
    """With torch's pipelining scanned (a torchtitan launch's scan: its sites reached), the ops
    torch chose under the step line are the scan's prediction, not a miss of that line."""
    package, trace = recorded
    script = tmp_path / "run_train.sh"
    script.write_text(RUN_TRAIN_022.replace("{overrides}", "--parallelism.pipeline_parallel_degree 2"))
    toml = tmp_path / "torchtitan/models/llama3/train_configs/llama3_8b.toml"
    toml.parent.mkdir(parents=True)
    toml.write_text(LLAMA3_8B_TOML)
    doc = run_scan(ScanInputs(str(script), ["torchtitan==0.2.2"], torch_version="2.13.0", jobs=1))
    assert any(s["path"].startswith("torch/distributed/pipelining/") and s["reachable"] == "yes"
               for s in doc["sites"])
    joined = join(doc, read_trace_dir(trace))
    assert not _misses(joined, "Trainer.forward_backward_step"), joined["run"]["misses"]
    assert not [f for f in joined["findings"] if f["kind"] == "unscanned-p2p"
                and "forward_backward_step" in f["message"]]
