"""An `exit` guard that checks a variable the caller gives is no sure stop: `[ -z "${X:-}" ]`
is `[ -z "$X" ]` with `set -u` kept quiet (an empty default states no value), so the walk reads
it as it reads `[ -z "$X" ]`: one branch, the training command after it followed (issue 22
items 4, 10).

The construct: THUDM/slime scripts/run-qwen3.5-27B.sh (commit
624b824a898ab0ec1fcb4d373004c7f3852bf515) :21-24 `if [ -z "${BASE_FOLDER:-}" ]; then echo ...;
exit 1; fi`, :26-30 `MASTER_ADDR=${MASTER_ADDR:-}` then `if [ -z "${MASTER_ADDR}" ]; then ...
exit 1; fi`, after a `pkill`/`ray stop` preamble (:4-11) and `set -ex` (:13), before `ray job
submit ... -- python3 train.py ... "${PERF_ARGS[@]}"` (:178-193); scripts/run-glm5.2-744B-A40B.sh
:31-34 and :212-215 guard BASE_DIR and MASTER_ADDR the same way. Both were read as "the training
command could not be followed" (the walk stopped at the first `exit 1`).
"""

from __future__ import annotations

import pytest

from auditor.config.launch import NotAPipelineRun, ScriptExits, parse_launch

PREAMBLE = "pkill -9 sglang\nsleep 3\nray stop --force\npkill -9 python\n"

GUARDS = """set -ex
if [ -z "${BASE_FOLDER:-}" ]; then
  echo "BASE_FOLDER is not set. Please set it to the base directory of your checkpoints."
  exit 1
fi

MASTER_ADDR=${MASTER_ADDR:-}
if [ -z "${MASTER_ADDR}" ]; then
  echo "MASTER_ADDR is not set. Please set it to the master node address."
  exit 1
fi
"""

COMMAND = """PERF_ARGS=(
   --tensor-model-parallel-size 4
   --pipeline-model-parallel-size 2
)
ray job submit --address="http://127.0.0.1:8265" \\
   -- python3 train.py \\
   --actor-num-nodes 4 \\
   --actor-num-gpus-per-node 8 \\
   --load "${BASE_FOLDER}/Qwen3.5-27B_slime/" \\
   "${PERF_ARGS[@]}"
"""


@pytest.mark.parametrize("preamble", [PREAMBLE, ""])
def test_a_guard_on_a_caller_variable_read_through_an_empty_default_goes_on(preamble: str) -> None:
    config = parse_launch("#!/bin/bash\n" + preamble + GUARDS + COMMAND, "run-qwen3.5-27B.sh")
    assert config.flags["pipeline_model_parallel_size"].value == "2"
    assert config.flags["actor_num_nodes"].value == "4"


@pytest.mark.parametrize("guard", ['[ -z "${BASE_DIR:-}" ] && exit 1',
                                   "[ -z ${BASE_DIR:-} ] && exit 1",
                                   '[[ -z "${BASE_DIR-}" ]] && exit 1',
                                   '[ "${MODE:-}" != train ] && exit 1',
                                   'test -n "${BASE_DIR:-}" || exit 1'])
def test_every_spelling_of_the_check_goes_on(guard: str) -> None:
    text = f"{guard}\ntorchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4\n"
    assert parse_launch(text, "run.sh").flags["pipeline_model_parallel_size"].value == "4"


@pytest.mark.parametrize("before", ['BASE_DIR=""', "BASE_DIR="])
def test_a_value_the_script_states_still_stops_it(before: str) -> None:
    """`BASE_DIR=""` is the script's own value (the caller's is overwritten): the test is decided,
    the exit sure."""
    text = f"{before}\nif [ -z \"${{BASE_DIR:-}}\" ]; then exit 1; fi\ntorchrun --nproc_per_node 8 pretrain_gpt.py\n"
    with pytest.raises(ScriptExits) as caught:
        parse_launch(text, "run.sh")
    assert "exits at line 2" in caught.value.what


def test_a_stated_default_decides_a_successful_exit() -> None:
    """`${MODE:-mock}` states a value: the test is decided, and its `exit 0` ends the script with
    success before the training line, which never runs (not a pipeline run, naming that line)."""
    text = 'MODE=${MODE:-mock}\n[ "$MODE" = mock ] && exit 0\ntorchrun --nproc_per_node 8 pretrain_gpt.py\n'
    with pytest.raises(NotAPipelineRun) as caught:
        parse_launch(text, "run.sh")
    assert "the `torchrun` at line 3 never runs" in str(caught.value)


@pytest.mark.parametrize("between", [
    "if (( GBS % MBS != 0 )); then\n    exit 2\nfi\n",  # a decided test: its branches merged after it
    "export CONTAINER_IMAGE\n",
])
def test_the_caller_s_empty_default_survives_a_test_or_an_export(between: str) -> None:
    """Megatron-Bridge@067f987df0 examples/megatron_mimo/qwen35_vl/slurm_sft.sh:70, :150-158:
    `CONTAINER_IMAGE="${CONTAINER_IMAGE:-}"`, a GBS check, then `[ -z "$CONTAINER_IMAGE" ] ... exit 1`:
    merging the GBS test's branches dropped that the empty value is the caller's, and the guard
    read as a sure stop (DOES NOT START)."""
    text = ("set -euo pipefail\nCONTAINER_IMAGE=\"${CONTAINER_IMAGE:-}\"\nGBS=8\nMBS=1\n" + between
            + 'if [ -z "$CONTAINER_IMAGE" ]; then\n    exit 1\nfi\n'
            "torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4\n")
    assert parse_launch(text, "run.sh").flags["pipeline_model_parallel_size"].value == "4"
