"""A pipeline run on gloo: torch never coalesces a gloo batch (supports_coalescing false), so
batch_isend_irecv posts each isend/irecv on its own, every one before any is waited on, and gloo
creates no communicator per pair: the NCCL lazy-init hang has no mechanism there, and the
schedule measured on 4 and 8 gloo processes at 24 MiB completes (docs/findings.md section 6).
What still decides a gloo run is the order of blocking ops issued on their own (a gloo send
completes only once its receive is posted: rules/nccl.toml, transport "gloo").

The script is written after NVIDIA/Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh
(commit 9539a12e1b04a68423f57b3eb41d6125161dca24, core_v0.17.0): `torchrun ... pretrain_gpt.py`
with arrays of flags, here PP=2, `--distributed-backend gloo|nccl` (Megatron-LM's own flag) and
TORCH_DISTRIBUTED_DEBUG=DETAIL on torch 2.10.0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.analysis import verdict

SCRIPT = """#!/bin/bash
# megatron-core==0.17.0
# torch==2.10.0
export TORCH_DISTRIBUTED_DEBUG=DETAIL
DISTRIBUTED_ARGS=(--nproc_per_node 8 --nnodes 1)
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 2
    --pipeline-model-parallel-size 2
)
torchrun ${{DISTRIBUTED_ARGS[@]}} pretrain_gpt.py \\
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\
    --seq-length 2048 --max-position-embeddings 2048 \\
    --micro-batch-size 1 --global-batch-size 16 --train-iters 10 \\
    ${{MODEL_PARALLEL_ARGS[@]}} \\
    --distributed-backend {backend}
"""


def _scan(capsys, tmp_path: Path, backend: str) -> tuple[int, dict]:
    script = tmp_path / "train_gpt.sh"
    script.write_text(SCRIPT.format(backend=backend), encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_on_gloo_a_batch_run_op_by_op_is_no_hang(capsys, tmp_path):
    code, doc = _scan(capsys, tmp_path, "gloo")
    reached = [s for s in doc["sites"] if s.get("reachable") == "yes"]
    assert reached and not [s for s in reached if s["verdict"] == "contradiction"]
    kinds = {f["kind"] for f in doc["findings"]}
    assert not kinds & {"unbatched-contradiction", "batch-runs-unbatched"}
    assert "NCCL" not in doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "clean" and code == 0
    assert "gloo" in doc["verdict"]["headline"]


def test_on_nccl_the_same_run_still_hangs_under_detail(capsys, tmp_path):
    code, doc = _scan(capsys, tmp_path, "nccl")
    assert doc["verdict"]["status"] == "findings" and code == 1
    assert "batch-runs-unbatched" in {f["kind"] for f in doc["findings"]}
    assert any(s["verdict"] == "contradiction" for s in doc["sites"])


@pytest.mark.parametrize(("backend", "alone", "expected"), [
    ("gloo", False, "ok"),  # a batch posted op by op: every receive is posted before any wait
    ("gloo", True, "unknown"),  # a blocking op on its own: its order decides (not replayed)
    ("nccl", False, "contradiction"),
    ("nccl", True, "contradiction"),
    (None, False, "contradiction"),  # the backend unknown: NCCL's hang is not ruled out
])
def test_the_site_verdict_of_an_unbatched_op_by_backend(backend, alone, expected):
    assert verdict.site_verdict("yes", False, True, backend, alone) == expected
