"""`fix --config run.sh` on a script that states no release, as almost every upstream launch
script is (Megatron-LM examples/mamba/train.sh at NVIDIA/Megatron-LM 9539a12e1b, ms-swift
examples/megatron/moe/qwen3_moe.sh at modelscope/ms-swift 2d3694fb18, verl
examples/grpo_trainer/run_qwen2-7b_math_megatron.sh at volcengine/verl b178a3cd56): `scan` judges
it on the newest and oldest releases the rules cover, and `fix` refused it as bad input ("which
megatron-core does this run use?", exit 2). It now patches and verifies on the newest releases,
the document scan's findings come from, and says so.
"""

from __future__ import annotations

import pytest

from auditor import cli
from auditor.errors import EXIT_INPUT

# The construct of Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh (torchrun of
# pretrain_gpt.py with its parallel sizes as flags), no `# megatron-core==X` line, plus the
# DETAIL export of ms-swift issue #9451.
SCRIPT = """#!/bin/bash
export TORCH_DISTRIBUTED_DEBUG=DETAIL
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --tensor-model-parallel-size 2 \\
    --pipeline-model-parallel-size 4 \\
    --micro-batch-size 1 --global-batch-size 16
"""


@pytest.mark.wheels
def test_fix_patches_a_script_that_states_no_release(tmp_path, capsys, real_sources):
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT)
    code = cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--no-simulate"])
    out, err = capsys.readouterr()
    assert code != EXIT_INPUT, err
    assert "-export TORCH_DISTRIBUTED_DEBUG=DETAIL" in out
    assert "no release stated: patched and verified on" in err and "megatron-core==0.19" in err
    assert script.read_text() == SCRIPT
