"""Runs that are not pipeline runs, or not on NCCL, say what they are (issue 22 item 11).

Upstream shapes: ms-swift's `swift sft ... --deepspeed zero2` (modelscope/ms-swift commit
3602360a56, examples/train/...: the Hugging Face Trainer, no Megatron) and `megatron export --load ...
--to_hf true` (examples/megatron/...); an Ascend run that sources the CANN environment (verl
examples/grpo_trainer/run_qwen3_4b_grpo_vllm_1k_npu.sh, volcengine/verl commit
b178a3cd56f58b2d502255daba591e92833930a7: `source /usr/local/Ascend/ascend-toolkit/set_env.sh`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from auditor.config.envlint import lint
from auditor.config.launch import parse_launch

HF = ("CUDA_VISIBLE_DEVICES=0,1 NPROC_PER_NODE=2 swift sft --model Qwen/Qwen2.5-7B-Instruct "
      "--train_type lora --dataset x --deepspeed zero2\n")
EXPORT = "CUDA_VISIBLE_DEVICES=0 megatron export --load Qwen2.5-7B-mcore --to_hf true --save out\n"


@pytest.mark.parametrize("script, says", [(HF, "Hugging Face Trainer"), (EXPORT, "converts checkpoints")])
def test_not_a_pipeline_run_is_a_decided_answer(script: str, says: str, tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text(script)
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    headline = done.stdout.splitlines()[2]
    assert headline.startswith("NOT A PIPELINE RUN:") and says in headline
    assert "p2paudit audits" in headline  # and what the auditor covers


ASCEND = """#!/bin/bash
source /usr/local/Ascend/ascend-toolkit/set_env.sh
export HCCL_CONNECT_TIMEOUT=1200
export NCCL_ASYNC_ERROR_HANDLING=1
torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4
"""


def test_an_ascend_run_is_named_and_gets_no_nccl_advice() -> None:
    config = parse_launch(ASCEND, "npu.sh")
    [said] = [d for d in config.diagnostics if d.kind == "launch.backend"]
    assert "Ascend" in said.message and "HCCL" in said.message and "do not apply" in said.message
    assert not [f for f in lint(config, "2.10.0") if "NCCL" in f.message]
    cuda = parse_launch(ASCEND.replace("source /usr/local/Ascend/ascend-toolkit/set_env.sh\n", "")
                        .replace("export HCCL_CONNECT_TIMEOUT=1200\n", ""), "gpu.sh")
    assert not any(d.kind == "launch.backend" for d in cuda.diagnostics)
    assert [f for f in lint(cuda, "2.10.0") if "NCCL_ASYNC_ERROR_HANDLING" in f.message]


def test_a_training_command_beats_a_preparation_step() -> None:
    # ms-swift examples/train/cached_dataset/dpo.sh (commit 2d3694fb18): `swift export` caches the
    # dataset, then `megatron rlhf` trains: the run is the training one
    config = parse_launch("swift export --model m --to_cached_dataset true --output_dir cache\n"
                          "NPROC_PER_NODE=8 megatron rlhf --rlhf_type dpo --pipeline_model_parallel_size 2\n", "dpo.sh")
    assert config.launcher == "megatron rlhf"
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)


def test_the_headline_names_the_command_that_trains_where_none_is_a_pipeline() -> None:
    # ms-swift examples/train/cached_dataset/sft.sh (commit 3602360a56): `swift export` caches the
    # dataset, then `swift sft --deepspeed zero3` trains: the run is data parallel training, not
    # an export that "trains nothing"
    config = parse_launch("swift export --model m --to_cached_dataset true --output_dir cache\n"
                          "NPROC_PER_NODE=4 swift sft --model m --cached_dataset cache/train "
                          "--deepspeed zero3\n", "sft.sh")
    assert config.launcher == "swift sft"
    [said] = [d for d in config.diagnostics if d.kind == "launch.not-pipeline"]
    assert "Hugging Face Trainer" in said.message and "trains nothing" not in said.message


def test_simulate_of_a_run_without_a_pipeline_is_one_line_of_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text(EXPORT)
    done = subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "not a pipeline run" in done.stderr and "internal error" not in done.stderr
