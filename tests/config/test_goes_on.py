"""Whether a script surely goes on past a training command that fails at start-up
(LaunchConfig.goes_on, read by analysis/commandcases.py): bash runs the next command unless
`set -e` (or an ERR trap) stops it, or the command's `&&` list / `|| exit` ends there.

The loop is after NVIDIA-NeMo/Megatron-Bridge @ 067f987df03b8355b03192d88d70f1709fedf51a
examples/models/gemma/gemma3_vl/sft.sh (a `for` over configurations running run_recipe.py),
the `||` fallback after the h33-review2 repro p3_fallback.sh."""

from __future__ import annotations

import pytest

from auditor.config.launch import parse_launch

RUN = ("torchrun --nproc_per_node=8 scripts/training/run_recipe.py --recipe ${M}_sft_config "
       "model.pipeline_model_parallel_size=2")
LOOP = "for M in gemma3_vl_4bX gemma3_vl_4b; do\n    " + RUN + "\ndone\n"


@pytest.mark.parametrize("text, want", [
    ("#!/bin/bash\n" + LOOP, (True, True)),
    ("#!/bin/bash\nset -ex\n" + LOOP, (False, False)),
    ("#!/bin/bash -e\n" + LOOP, (False, False)),
    ("#!/bin/bash\nset -o errexit\n" + LOOP, (False, False)),
    ("#!/bin/bash\ntrap 'exit 1' ERR\n" + LOOP, (False, False)),
    ("#!/bin/bash\nsource ./env.sh\n" + LOOP, (False, False)),
    ("#!/bin/bash\nM=a\n" + RUN + " || " + RUN.replace("${M}", "b") + "\n", (True, False)),
    ("#!/bin/bash\nM=a\n" + RUN + " && " + RUN.replace("${M}", "b") + "\n", (False, False)),
    ("#!/bin/bash\nM=a\n" + RUN + " || exit 1\nM=b\n" + RUN + "\n", (False, True)),
    # one branch or the other (NVIDIA/Megatron-LM @ 3bec9aa97d examples/multimodal/nvlm/
    # sft_qwen20_72b_internvit_6b.sh:151-155, `if [[ $BATCH -eq 0 ]]; then torchrun ... else srun ...`)
    ("#!/bin/bash\nM=a\nif [[ $BATCH -eq 0 ]]; then\n    " + RUN + "\nelse\n    " + RUN.replace("${M}", "b")
     + "\nfi\n", (False, False)),
])
def test_the_script_goes_on_past_a_failing_command_only_where_bash_does(text, want):
    assert parse_launch(text, "sft.sh").goes_on == want
