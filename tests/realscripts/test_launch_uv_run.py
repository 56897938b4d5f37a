"""`uv run [uv options] COMMAND`: uv runs COMMAND in the project's environment, so the training
command is what follows its options (issue 22 item 9: launchers beyond torchrun).

Shape from Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a, examples/models/gemma/gemma3_vl/sft.sh):
`uv run python -m torch.distributed.run --nproc_per_node=8 scripts/training/run_recipe.py ...`.
Options taking a value are read from rules/megatron-lm.toml [[command_runner]] (uv's `uv run --help`),
so `uv run --with deepspeed python train.py` does not read `deepspeed` as the launcher.
"""

from __future__ import annotations

import pytest

from auditor.config.launch import CommandNotFollowed, parse_launch


def test_uv_run_python_m_torch_distributed_run() -> None:
    config = parse_launch("uv run python -m torch.distributed.run --nproc_per_node=8 pretrain_gpt.py "
                          "--pipeline-model-parallel-size 2\n", "sft.sh")
    assert config.launcher == "python -m torch.distributed.run pretrain_gpt.py"
    assert config.wrapper == ["uv", "run"] and config.world_size == 8
    assert config.flags["pipeline_model_parallel_size"].value == "2"


def test_uv_options_with_values_are_skipped() -> None:
    config = parse_launch("uv run --with deepspeed --project . -p 3.12 --frozen torchrun --nproc_per_node 4 "
                          "pretrain_gpt.py --pipeline-model-parallel-size 4\n", "run.sh")
    assert config.launcher == "torchrun pretrain_gpt.py" and config.world_size == 4
    assert config.wrapper == ["uv", "run", "--with", "deepspeed", "--project", ".", "-p", "3.12", "--frozen"]


def test_uv_run_module_is_python_m() -> None:
    config = parse_launch("uv run -m torch.distributed.run --nproc_per_node 2 pretrain_gpt.py\n", "run.sh")
    assert config.launcher == "python -m torch.distributed.run pretrain_gpt.py" and config.world_size == 2


def test_other_uv_subcommands_run_nothing() -> None:
    with pytest.raises(CommandNotFollowed):
        parse_launch("uv pip install deepspeed\n", "run.sh")
