"""The pipeline group's own backend decides how its batches run, not the default one.

Megatron-LM's initialize.py (NVIDIA/Megatron-LM megatron/training/initialize.py:342-369 at
commit 9539a12e1b04a68423f57b3eb41d6125161dca24, core_v0.17.0) calls
init_process_group(backend=args.distributed_backend), then
initialize_model_parallel(pipeline_model_parallel_comm_backend=args.pipeline_model_parallel_comm_backend):
with `--distributed-backend gloo --pipeline-model-parallel-comm-backend nccl` the pipeline's
batch_isend_irecv runs on NCCL, where TORCH_DISTRIBUTED_DEBUG=DETAIL un-batches it (torch 2.10).
None (the flag left out) falls back to the default backend. The script is written after
examples/gpt3/train_gpt3_175b_distributed.sh at the same commit.
"""

from __future__ import annotations

import json
from pathlib import Path

from auditor import cli

SCRIPT = """#!/bin/bash
# megatron-core==0.17.0
# torch==2.10.0
export TORCH_DISTRIBUTED_DEBUG=DETAIL
DISTRIBUTED_ARGS=(--nproc_per_node 8 --nnodes 1)
torchrun ${{DISTRIBUTED_ARGS[@]}} pretrain_gpt.py \\
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\
    --seq-length 2048 --max-position-embeddings 2048 \\
    --micro-batch-size 1 --global-batch-size 16 --train-iters 10 \\
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \\
    --distributed-backend {default} {pipeline}
"""


def _scan(capsys, tmp_path: Path, default: str, pipeline: str) -> tuple[int, dict]:
    script = tmp_path / "train_gpt.sh"
    script.write_text(SCRIPT.format(default=default, pipeline=pipeline), encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_gloo_default_with_an_nccl_pipeline_group_still_hangs_under_detail(capsys, tmp_path):
    code, doc = _scan(capsys, tmp_path, "gloo", "--pipeline-model-parallel-comm-backend nccl")
    assert doc["verdict"]["status"] == "findings" and code == 1
    assert "batch-runs-unbatched" in {f["kind"] for f in doc["findings"]}


def test_an_unresolved_pipeline_backend_is_never_clean(capsys, tmp_path):
    code, doc = _scan(capsys, tmp_path, "gloo", '--pipeline-model-parallel-comm-backend "$PP_BACKEND"')
    assert doc["verdict"]["status"] != "clean" and code != 0


def test_a_ucc_pipeline_group_is_not_judged_as_gloo(capsys, tmp_path):
    # megatron/core/parallel_state.py:1112-1115 (same commit): None, "nccl" or "ucc"; how UCC
    # batches is not read: not CLEAN on the default backend's (gloo's) reading.
    code, doc = _scan(capsys, tmp_path, "gloo", "--pipeline-model-parallel-comm-backend ucc")
    assert doc["verdict"]["status"] != "clean" and code != 0


def test_the_gloo_clean_does_not_promise_a_gpu_run_runs(capsys, tmp_path):
    code, doc = _scan(capsys, tmp_path, "gloo", "")
    assert doc["verdict"]["status"] == "clean" and code == 0
    assert "CUDA" in doc["verdict"]["headline"]
