"""One Stack per launch: the launch reader's record carries the framework stack its launcher
gives (rulebook.frameworks.Stack), derived once and handed to derive, releases and scan."""

from __future__ import annotations

import pytest

from auditor.config.launch import parse_launch
from auditor.errors import InputError
from auditor.rulebook.frameworks import Stack


def test_a_launch_derives_its_stack_once() -> None:
    launch = parse_launch("torchrun --nproc-per-node 2 pretrain_gpt.py --pipeline-model-parallel-size 2\n",
                          "run.sh")
    stack = launch.stack
    assert launch.stack is stack  # one record, not re-derived per question
    assert stack.distributions == ["megatron-core"]
    assert stack.names == {"megatron-lm", "megatron-core"}
    assert stack.needs == ["pipeline_model_parallel_size", "batch_p2p_comm"]
    assert stack.covered_releases["megatron-core"]
    assert stack.foreign_settings == {}


def test_a_launch_read_again_follows_its_launcher() -> None:
    launch = parse_launch("deepspeed train.py --pipe-parallel-size 2\n", "run.sh")
    assert launch.stack.distributions == ["deepspeed"]
    launch.launcher = "megatron sft"
    assert launch.stack.distributions == ["ms-swift", "mcore-bridge", "megatron-core"]


def test_an_unclaimed_launcher_has_no_stack_and_says_so_when_asked() -> None:
    """Which frameworks run is unknown: no names, no foreign settings; its distributions are a
    rules error naming the launcher, as before the record."""
    stack = Stack.of("accelerate train.py")
    assert stack.names is None and stack.foreign_settings == {}
    with pytest.raises(InputError, match="no rules file"):
        _ = stack.distributions
