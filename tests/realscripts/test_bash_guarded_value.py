"""Past a guard on a caller's variable the variable is known non-empty, its value unknown
(issue 22 items 4, 10; reviewer's finding on turn 9).

The construct: THUDM/slime scripts/run-qwen3.5-27B.sh (commit
624b824a898ab0ec1fcb4d373004c7f3852bf515) :26-30 `MASTER_ADDR=${MASTER_ADDR:-}` then `if [ -z
"${MASTER_ADDR}" ]; then ... exit 1; fi`. The walk goes on past such an `exit` (the caller may give
the variable), so from there on the variable holds what the caller gave: not empty (the guard
proves it) and not known. Read as empty, `--pipeline-model-parallel-size $PP` lost its value and
a guarded `$PARALLEL_ARGS` read as no parallelism at all.
"""

from __future__ import annotations

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch

TAIL = "--num-layers 8 --micro-batch-size 1 --global-batch-size 8\n"


@pytest.mark.parametrize("guard", ['PP=${PP:-}\nif [ -z "$PP" ]; then\n  echo "set PP"; exit 1\nfi',
                                   '[ -z "${PP:-}" ] && { echo "set PP"; exit 1; }',
                                   'test -n "${PP:-}" || exit 1'])
def test_a_guarded_value_is_unknown_not_empty(guard: str) -> None:
    text = f"#!/bin/bash\n{guard}\ntorchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size $PP {TAIL}"
    config = parse_launch(text, "run.sh")
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_guarded_arguments_are_unknown_not_absent() -> None:
    text = ('#!/bin/bash\nif [ -z "${PARALLEL_ARGS:-}" ]; then\n  echo "export PARALLEL_ARGS"; exit 1\nfi\n'
            f"torchrun --nproc_per_node 8 pretrain_gpt.py $PARALLEL_ARGS {TAIL}")
    config = parse_launch(text, "run.sh")
    assert "pipeline_model_parallel_size" not in config.flags
    assert any(d.kind == "launch.unresolved-args" and "$PARALLEL_ARGS" in d.message for d in config.diagnostics)

