"""auditor.fix.script: a remedy as edits of the launch script's own lines, at the lines the scan
read the settings from. The script is in the shape of NVIDIA/Megatron-LM core_v0.17.0
examples/gpt3/train_gpt3_175b_distributed.sh (exports, then `torchrun ... pretrain_gpt.py` with
`\\` continuations), with the debug setting a user adds while chasing a hang."""

from __future__ import annotations

import pytest

from auditor.config.launch import parse_launch
from auditor.fix.edits import apply
from auditor.fix.remedies import Option
from auditor.fix.script import NotMechanical, edits_for

SCRIPT = """\
#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
export NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL

torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --pipeline-model-parallel-size 4 \\
    --num-layers 96 \\
    --no-overlap-p2p-communication
"""


def fixed(option: Option, script: str = SCRIPT) -> str:
    launch = parse_launch(script, "run.sh")
    return apply(script, edits_for(option, launch, {"run.sh": script}))


def test_a_variable_set_with_another_is_removed_alone():
    assert fixed(Option("debug", "unset_env", "TORCH_DISTRIBUTED_DEBUG")) == SCRIPT.replace(
        "export NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL", "export NCCL_DEBUG=INFO ")


def test_a_line_that_sets_only_the_variable_goes():
    assert fixed(Option("c", "unset_env", "CUDA_DEVICE_MAX_CONNECTIONS")) == SCRIPT.replace(
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\n", "")


def test_set_and_rename_in_place():
    assert fixed(Option("info", "set_env", "TORCH_DISTRIBUTED_DEBUG", "INFO")) == SCRIPT.replace(
        "TORCH_DISTRIBUTED_DEBUG=DETAIL", "TORCH_DISTRIBUTED_DEBUG=INFO")
    assert fixed(Option("r", "rename_env", "NCCL_DEBUG", "NCCL_DEBUG_OLD")) == SCRIPT.replace(
        "NCCL_DEBUG=INFO", "NCCL_DEBUG_OLD=INFO")


def test_a_variable_the_script_lacks_is_exported_after_its_last_export():
    assert fixed(Option("nb", "set_env", "TORCH_NCCL_USE_COMM_NONBLOCKING", "1")) == SCRIPT.replace(
        "TORCH_DISTRIBUTED_DEBUG=DETAIL\n", "TORCH_DISTRIBUTED_DEBUG=DETAIL\nexport TORCH_NCCL_USE_COMM_NONBLOCKING=1\n")


def test_a_flag_given_is_changed_and_one_not_given_added_inside_the_continuations():
    assert fixed(Option("pp", "set_flag", "--pipeline-model-parallel-size", "2")) == SCRIPT.replace(
        "--pipeline-model-parallel-size 4", "--pipeline-model-parallel-size 2")
    assert fixed(Option("mb", "set_flag", "--micro-batch-size", "1")) == SCRIPT.replace(
        "    --num-layers 96 \\\n", "    --num-layers 96 \\\n    --micro-batch-size 1 \\\n")


def test_what_is_no_edit_of_this_script_says_why():
    with pytest.raises(NotMechanical, match="comes from the caller's environment"):
        fixed(Option("x", "unset_env", "NCCL_ALGO"))
    one_line = "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 96\n"
    with pytest.raises(NotMechanical, match="has no `\\\\` continuation to add --micro-batch-size"):
        fixed(Option("mb", "set_flag", "--micro-batch-size", "1"), one_line)
    with pytest.raises(NotMechanical, match="is no edit of the script"):
        fixed(Option("up", "upgrade", "torch", "2.11.0"))
