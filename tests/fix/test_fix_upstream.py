"""`p2paudit fix` on launch scripts written as upstream writes them: a flag added inside a
command whose arguments span `\\` continuations (a value on a line of its own, a commented-out
command after it), and a Megatron-LM flag whose value is changed in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import cli

pytestmark = pytest.mark.usefixtures("real_sources")

# As modelscope/ms-swift 3602360a5 examples/megatron/mcore_bridge/lora/moe.sh writes it: inline
# environment, `--dataset` with a second value on its own continued line, the command's last
# flag without `\`, then a commented-out `swift infer`. No --ddp_timeout: ms-swift's default
# process-group timeout is 18000000 s.
SWIFT = """\
# megatron-core==0.17.0 ms-swift==4.3.0 mcore-bridge==1.4.1
# 50GiB
PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' \\
NPROC_PER_NODE=2 \\
CUDA_VISIBLE_DEVICES=0,1 \\
megatron sft \\
    --model Qwen/Qwen3-30B-A3B-Instruct-2507 \\
    --dataset 'swift/Chinese-Qwen3-235B-2507-Distill-data-110k-SFT#2000' \\
              'swift/self-cognition#1000' \\
    --tuner_type lora \\
    --expert_model_parallel_size 2 \\
    --micro_batch_size 8 \\
    --global_batch_size 16 \\
    --model_author swift \\
    --model_name swift-robot


# CUDA_VISIBLE_DEVICES=0 \\
# swift infer \\
#     --stream true
"""

# As NVIDIA/Megatron-LM core_v0.17.0 examples/llama/train_llama3_8b_h100_fp8.sh passes
# `--distributed-timeout-minutes` (there 60), here at two days: timeout-too-large.
MEGATRON_LM = """\
#!/bin/bash
# megatron-core==0.17.0
GPUS_PER_NODE=8
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes 2 --node_rank ${NODE_RANK:-0}"

torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \\
    --tensor-model-parallel-size 2 \\
    --pipeline-model-parallel-size 4 \\
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\
    --micro-batch-size 1 --global-batch-size 64 \\
    --distributed-timeout-minutes 2880 \\
    --bf16
"""


def _fix(tmp_path: Path, text: str, capsys) -> tuple[int, str, str, Path]:
    script = tmp_path / "train.sh"
    script.write_text(text)
    code = cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--no-simulate"])
    out, err = capsys.readouterr()
    return code, out, err, script


def _changed(diff: str) -> list[str]:
    return [line for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_the_timeout_flag_goes_inside_the_continued_command(tmp_path, capsys):
    code, out, err, script = _fix(tmp_path, SWIFT, capsys)
    assert code == 0, err
    assert _changed(out) == ["+    --ddp_timeout 1800 \\"]
    assert "gone         WARNING timeout-too-large" in err
    patched = SWIFT.replace("    --model_name", "    --ddp_timeout 1800 \\\n    --model_name")
    assert cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--apply", "--no-simulate"]) == 0
    assert script.read_text() == patched
    capsys.readouterr()
    cli.main(["scan", "--config", str(script), "--torch", "2.10.0"])
    assert "timeout-too-large" not in capsys.readouterr().out


def test_a_megatron_lm_flag_is_changed_where_it_is_written(tmp_path, capsys):
    code, out, err, _ = _fix(tmp_path, MEGATRON_LM, capsys)
    assert code == 0, err
    assert _changed(out) == ["+export TORCH_NCCL_USE_COMM_NONBLOCKING=1",
                             "+export TORCH_NCCL_NONBLOCKING_TIMEOUT=600",
                             "-    --distributed-timeout-minutes 2880 \\",
                             "+    --distributed-timeout-minutes 30 \\"]
    assert "patch: verified" in err


def test_nothing_to_patch_writes_nothing_and_exits_by_the_errors_left(tmp_path, capsys):
    """The same script with a 30-minute timeout and no pipeline: no finding has a remedy, so
    no diff and no backup; no ERROR, so exit 0."""
    text = (MEGATRON_LM.replace("2880", "30")
            .replace("--pipeline-model-parallel-size 4", "--pipeline-model-parallel-size 1"))
    code, out, err, script = _fix(tmp_path, text, capsys)
    assert code == 0 and out == ""
    assert "nothing to patch" in err
    assert not Path(str(script) + ".p2paudit-bak").exists()
