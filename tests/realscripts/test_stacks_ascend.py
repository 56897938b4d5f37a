"""Issue 22 item 11: an Ascend NPU run. The script says so only through what it sets for torch_npu
(PYTORCH_NPU_ALLOC_CONF, ASCEND_RT_VISIBLE_DEVICES, HCCL_* in rules/megatron-lm.toml [[backend]]);
its process groups are HCCL's, whatever backend name the trainer passes (ms-swift passes
ddp_backend='nccl', which torch_npu runs on HCCL). The torch rules were read for NCCL and gloo:
how HCCL runs batched P2P, and whether TORCH_DISTRIBUTED_DEBUG=DETAIL un-batches it, is not in
them. So the run's backend is hccl, no NCCL finding applies, and the verdict says what the run is
and what the audit covers for it: NOT COVERED, never CLEAN, never FINDINGS from NCCL's rules.

The script is written after modelscope/ms-swift examples/ascend/megatron/train_sft_full.sh
(commit 2d3694fb1862b83a9633a95c5a51607b07198034): `PYTORCH_NPU_ALLOC_CONF=... NPROC_PER_NODE=4
megatron sft ... --tensor_model_parallel_size 2 --pipeline_model_parallel_size 2`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = {"ms-swift": "4.3.0", "mcore-bridge": "1.0.2", "megatron-core": "0.15.0"}

ASCEND = """{pre}PYTORCH_NPU_ALLOC_CONF='expandable_segments:True' \\
NPROC_PER_NODE=4 \\
megatron sft \\
    --model Qwen/Qwen3-4B \\
    --tensor_model_parallel_size 2 \\
    --pipeline_model_parallel_size 2 \\
    --micro_batch_size 1 \\
    --global_batch_size 4 \\
    --sequence_parallel true
"""
DETAIL = "export TORCH_DISTRIBUTED_DEBUG=DETAIL\n"


def _write(tmp_path: Path, pre: str = "") -> Path:
    path = tmp_path / "train_sft_full.sh"
    path.write_text(ASCEND.format(pre=pre), encoding="utf-8")
    return path


def _derive(path: Path, overrides=None):
    return derive(parse_launch(path.read_text(encoding="utf-8"), str(path)), dict(VERSIONS),
                  overrides, torch_version="2.10.0")


def test_the_run_is_on_hccl(tmp_path):
    eff = _derive(_write(tmp_path))
    backend = eff.values["distributed_backend"]
    assert backend.value == "hccl"
    assert "PYTORCH_NPU_ALLOC_CONF" in backend.provenance
    # NCCL's lazy pair communicators are NCCL's: not this run's
    assert eff.values["torch_unbatched_p2p_new_communicator"].value is False


def test_whether_hccl_batches_is_not_in_the_torch_rules(tmp_path):
    eff = _derive(_write(tmp_path, DETAIL))
    assert eff.values["torch_debug_wrapper"].value is UNKNOWN
    assert eff.values["torch_batch_coalesces"].value is UNKNOWN


def test_the_user_can_say_otherwise(tmp_path):
    eff = _derive(_write(tmp_path), {"distributed_backend": "nccl"})
    assert eff.values["distributed_backend"].value == "nccl"


# ms-swift 4.6.0 patches megatron-core's _batched_p2p_ops onto the default group: pipeline
# neighbours talk over two groups, which on NCCL is two lazily created communicators.
NEWEST = ("--target", "ms-swift==4.6.0", "--target", "mcore-bridge==1.6.5", "--target", "megatron-core==0.19.2")


def _scan(script: Path, *extra: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json", *NEWEST, *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    doc = json.loads(proc.stdout)
    assert proc.returncode == doc["verdict"]["exit_code"] == 1
    return doc


@pytest.mark.heavy
@pytest.mark.wheels
@pytest.mark.parametrize("pre,torch", [("", "2.10.0"), (DETAIL, "2.10.0"), (DETAIL, "2.11.0")])
def test_the_verdict_says_what_is_not_covered(tmp_path, pre, torch):
    doc = _scan(_write(tmp_path, pre), "--torch", torch)
    verdict = doc["verdict"]
    assert verdict["status"] == "not-covered", verdict["headline"]
    assert verdict["headline"].startswith("NOT COVERED: ")
    assert "Ascend" in verdict["headline"] and "HCCL" in verdict["headline"]
    assert "pipeline schedule" in verdict["headline"]  # what the audit does cover
    kinds = {f["kind"] for f in doc["findings"]}
    assert not kinds & {"lazy-init-unbounded", "batch-runs-unbatched", "unbatched-contradiction", "split-communicators"}


@pytest.mark.heavy
@pytest.mark.wheels
def test_at_pipeline_size_1_no_stage_sends_on_any_backend(tmp_path):
    """modelscope/ms-swift@3602360a56 examples/ascend/multi-node/megatron/node1.sh (test9's
    swift-ascend-node1): an Ascend LoRA run at TP=2 PP=1. No stage sends or receives, so the HCCL
    stack the rules do not model has no pipeline P2P to run: CLEAN, saying why, not NOT COVERED."""
    script = tmp_path / "node1.sh"
    script.write_text(ASCEND.format(pre="").replace("--pipeline_model_parallel_size 2",
                                                    "--pipeline_model_parallel_size 1"), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json", *NEWEST,
         "--torch", "2.10.0"], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    verdict = json.loads(proc.stdout)["verdict"]
    assert (proc.returncode, verdict["status"]) == (0, "clean"), verdict["headline"]
    assert "pipeline_model_parallel_size 1" in verdict["headline"] and "HCCL" in verdict["headline"]


@pytest.mark.heavy
@pytest.mark.wheels
def test_at_pipeline_size_1_an_undecided_input_is_never_clean(tmp_path):
    """The one-stage reading holds only where nothing else is undecided: a torch release the
    rules do not cover (`--torch 2.99.0`) stays undecided, as on any other backend."""
    script = tmp_path / "node1.sh"
    script.write_text(ASCEND.format(pre="").replace("--pipeline_model_parallel_size 2",
                                                    "--pipeline_model_parallel_size 1"), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json", *NEWEST,
         "--torch", "2.99.0"], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    verdict = json.loads(proc.stdout)["verdict"]
    assert proc.returncode == 1 and verdict["status"] != "clean", verdict["headline"]
    assert any("2.99.0" in u["what"] for u in verdict["undecided"]), verdict["undecided"]
