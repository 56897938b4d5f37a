"""An entry that calls megatron-core's P2P functions itself, outside any schedule, is walked from
its own `__main__` too (config/entry_p2p_calls.py): the sites only those calls reach are judged,
not left as "no call path from the entry points".

After Pai-Megatron-Patch (alibaba/Pai-Megatron-Patch, commit
a098ca5acb, examples/bloom/evaluate_megatron_bloom.py:22-23, :73, :84): an evaluation loop that
chains its stages by hand, receiving from the previous stage before its forward and sending to the
next after it, launched as examples/bloom/run_evaluate_megatron_bloom.sh:100-105 does (`torchrun
evaluate_megatron_bloom.py --pipeline-model-parallel-size ${PP}`). The file's own recv_forward /
send_forward are module functions of p2p_communication only up to megatron-core 0.13; here the
loop uses the release's (0.19.2) inference helpers recv_from_prev_pipeline_rank_ /
send_to_next_pipeline_rank (megatron/core/inference/communication_utils.py:83-142), which no
training schedule calls.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from auditor.config.entry_p2p_calls import direct_entry
from auditor.config.launch import parse_launch

ROOT = Path(__file__).resolve().parents[2]

EVALUATE = '''"""Loss of a checkpoint, stages chained by hand (evaluate_megatron_bloom.py's loop)."""
import torch

from megatron.core import parallel_state
from megatron.core.inference.communication_utils import recv_from_prev_pipeline_rank_, send_to_next_pipeline_rank


def forward_step(batch, model):
    input_tensor = torch.empty(batch.shape)
    recv_from_prev_pipeline_rank_(input_tensor)
    model.set_input_tensor(input_tensor)
    output = model(batch)
    send_to_next_pipeline_rank(output)
    if parallel_state.is_pipeline_last_stage():
        return output.sum()
    return None


def main():
    model = torch.nn.Linear(8, 8)
    for batch in [torch.zeros(2, 8)]:
        forward_step(batch, model)


if __name__ == "__main__":
    main()
'''
# The same loop importing nothing of megatron-core's P2P: no entry of its own is walked.
PLAIN = EVALUATE.replace(
    "from megatron.core.inference.communication_utils import recv_from_prev_pipeline_rank_, "
    "send_to_next_pipeline_rank\n", "").replace("    recv_from_prev_pipeline_rank_(input_tensor)\n", "").replace(
    "    send_to_next_pipeline_rank(output)\n", "")

LAUNCH = """#!/bin/bash
torchrun --nproc_per_node 2 evaluate_pp.py --pipeline-model-parallel-size 2 --tensor-model-parallel-size 1
"""


def _scan(tmp_path: Path, code: str) -> dict:
    (tmp_path / "evaluate_pp.py").write_text(code)
    script = tmp_path / "run_evaluate.sh"
    script.write_text(LAUNCH)
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script),
                           "--target", "megatron-core==0.19.2", "--torch", "2.10.0",
                           "--set", "distributed_backend=nccl", "--set", "overlap_p2p_comm=False",
                           "--format", "json"], check=False, capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    return json.loads(proc.stdout)


def _utils_sites(doc: dict) -> dict[int, str]:
    return {s["line"]: s["reachable"] for s in doc["sites"]
            if s["path"] == "megatron/core/inference/communication_utils.py"}


def test_the_entrys_own_p2p_calls_are_walked(tmp_path) -> None:
    doc = _scan(tmp_path, EVALUATE)
    assert "evaluate_pp.py (run as __main__)" in doc["entries"], doc["entries"]
    assert _utils_sites(doc) == {105: "yes", 107: "yes", 136: "yes", 138: "yes"}, _utils_sites(doc)
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    launch = parse_launch(LAUNCH, str(tmp_path / "run_evaluate.sh"))
    assert direct_entry(launch) == ("evaluate_pp.py (run as __main__)", "evaluate_pp", EVALUATE)
    # the same loop importing none of them: the schedule alone, those sites reached by nothing
    plain = _scan(tmp_path, PLAIN)
    assert plain["entries"] == ["megatron-core pipeline schedule"], plain["entries"]
    assert set(_utils_sites(plain).values()) == {"unknown"}, _utils_sites(plain)
    assert direct_entry(launch) is None
