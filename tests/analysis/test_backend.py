"""analysis.backend: which backend the pipeline group is on decides what a batch of P2P ops
means. A `launch.backend` finding (Ascend's HCCL, config.launch) is the run's other backend
only while the config still says that backend; `--set distributed_backend=nccl` overrides it."""

from __future__ import annotations

from auditor.analysis.backend import OP_BY_OP_POSTED, op_by_op_words, other_backend


def _doc(configured: str) -> dict:
    finding = {"kind": "launch.backend", "message": "sets ASCEND_RT_VISIBLE_DEVICES (run.sh:3)",
               "detail": {"backend": "hccl", "decide": "--set distributed_backend=nccl"}}
    return {"findings": [finding],
            "config": {"effective": {"distributed_backend": configured}, "sources": {}}}


def test_a_named_backend_is_the_runs_while_the_config_says_it():
    found = other_backend(_doc("hccl"))
    assert found is not None and found["backend"] == "hccl"
    assert found["said"] == "sets ASCEND_RT_VISIBLE_DEVICES (run.sh:3)"


def test_a_set_backend_overrides_what_the_script_shows():
    assert other_backend(_doc("nccl")) is None
    assert other_backend({"findings": [], "config": {}}) is None


def test_gloo_runs_a_batch_op_by_op_and_says_its_limit():
    assert "gloo" in OP_BY_OP_POSTED and "nccl" not in OP_BY_OP_POSTED
    words = op_by_op_words("gloo")
    assert "no lazy-init hang" in words and "no CUDA tensors" in words
