"""Issue 22: every INCONCLUSIVE names one concrete step that decides it: a flag, `--set KEY=VALUE`
with a real key (never a value derived from others), `--target NAME==VERSION` with the name,
never a flag the script already has (`--torch` where the script states its torch).

The script is the shipped examples/pipelining_pp2.sh (torch.distributed.pipelining, written after
pytorch/pytorch torch/distributed/pipelining/schedules.py's Schedule1F1B usage): its torch is
stated (`# torch==2.13.0`); it is torch's pipelining stack (rules/pipelining.toml), whose backend
its own init_process_group("gloo") states, so what stays open is the order of its stage ops.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from auditor.analysis.verdict import judge
from auditor.config.settings import known_settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_step_is_concrete_on_the_pipelining_example():
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", "examples/pipelining_pp2.sh",
         "--target", "examples/pipelining_train.py", "--target", "torch",
         "--entry", "pipelining_train:train_1f1b", "--format", "json"],
        check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    doc = json.loads(proc.stdout)
    steps = [u["decide"] for u in doc["verdict"]["undecided"]]
    assert doc["verdict"]["status"] == "inconclusive" and steps
    derived = set(doc["config"]["unknown_inputs"])
    for step in steps:
        assert "NAME==" not in step and "KEY=VALUE" not in step and " input" not in step, step
        assert "--torch" not in step, step  # the script states torch==2.13.0
        for key in re.findall(r"--set (\w+)=", step):
            assert key in known_settings() and key not in derived, step
    assert doc["launch"]["launcher"] == "pipelining pipelining_train.py"  # not megatron's
    assert set(steps) == {"`p2paudit record` of a run, then `p2paudit report` (its replay decides the order)"}


def test_a_guard_on_config_attributes_is_decided_by_their_keys():
    site = {"path": "p.py", "line": 1, "api": "send", "function": "f", "verdict": "unknown",
            "reachable": "yes", "paths": ["a -> f"], "runs_batched": False,
            "undecided": "reached under an undecided guard",
            "decided_by": ["config.overlap_p2p_comm", "self.config.variable_seq_lengths"]}
    doc = {"sites": [site], "config": {"effective": {"batch_p2p_comm": True,
                                                      "pipeline_model_parallel_size": 2}}}
    (u,) = judge(doc).undecided
    assert u.decide == "--set overlap_p2p_comm=VALUE --set variable_seq_lengths=VALUE"


def test_a_needed_key_no_release_leaves_open_is_decided_by_its_value():
    """Every release of the run is pinned and still batch_p2p_comm is open (the case of
    modelscope/ms-swift @ 3602360a5 examples/megatron/benchmark/deepspeed.sh before `swift sft`
    was read as no pipeline run): `--target NAME==VERSION` decides nothing, only the value does."""
    site = {"path": "p.py", "line": 1, "api": "send", "function": "f", "verdict": "unknown",
            "reachable": "yes", "paths": [["a", "f"]], "runs_batched": False}
    doc = {"sites": [site], "config": {
        "effective": {"batch_p2p_comm": "unknown", "pipeline_model_parallel_size": 2},
        "sources": {"batch_p2p_comm": "ms-swift"},
        "versions": {"ms-swift": "4.3.0", "mcore-bridge": "1.4.1", "megatron-core": "0.17.0"}}}
    steps = [u.decide for u in judge(doc).undecided if u.what.startswith("batch_p2p_comm")]
    assert steps == ["--set batch_p2p_comm=true|false"]
