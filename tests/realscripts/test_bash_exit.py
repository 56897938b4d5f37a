"""Issue 22: a script that surely runs `exit` before its training command does not start as
written, and says so (DOES NOT START naming the line), instead of "the training command could not
be followed". Only an `exit` the walk is certain to reach counts: one under an undecided test, in
a subshell or in a `bash -c` script ends no more than that branch or shell.

The scripts are written after NVIDIA-NeMo/Megatron-Bridge examples/models/deepseek_v4/slurm_pretrain.sh
(commit 067f987df03b8355b03192d88d70f1709fedf51a): `CONTAINER_IMAGE=""`, then
`if [ -z "$CONTAINER_IMAGE" ]; then echo "ERROR: ..."; exit 1; fi` before
`$SRUN_CMD bash -lc "... $CMD"`; the training command here is a torchrun line, as in its
Megatron-LM counterparts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, ScriptExits, parse_launch

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """#!/bin/bash
#SBATCH --nodes=2
set -euo pipefail
CONTAINER_IMAGE={image}
mkdir -p logs

if [ -z "$CONTAINER_IMAGE" ]; then
    echo "ERROR: CONTAINER_IMAGE must be set. Please specify a valid container image."
    exit 1
fi

CMD="torchrun --nproc_per_node=8 pretrain_gpt.py --pipeline-model-parallel-size 4 --num-layers 8"
srun --container-image=$CONTAINER_IMAGE bash -lc "
    set -euo pipefail
    $CMD
"
"""


def _parse(text: str, environ: dict[str, str] | None = None):
    return parse_launch(text, "slurm_pretrain.sh", environ=environ)


def test_a_literal_empty_guard_stops_the_script_before_its_command():
    with pytest.raises(ScriptExits) as caught:
        _parse(SCRIPT.format(image='""'))
    assert caught.value.line == 9
    assert "exits at line 9 (`exit 1`)" in caught.value.what
    assert "test at line 7 (`if [ -z \"$CONTAINER_IMAGE\" ]; then`)" in caught.value.what
    assert "does not start" in caught.value.what


def test_with_the_image_set_the_command_is_read():
    config = _parse(SCRIPT.format(image="/images/pytorch.sqsh"))
    assert config.flags["pipeline_model_parallel_size"].value == "4"


def test_an_exit_under_an_undecided_test_is_one_branch_only():
    """`CONTAINER_IMAGE=${CONTAINER_IMAGE:-$1}`: the caller decides; the exit may not run."""
    config = _parse(SCRIPT.format(image='"$1"'))
    assert config.flags["pipeline_model_parallel_size"].value == "4"


@pytest.mark.parametrize("stop", ["( exit 1 )", "bash -c 'exit 1'", "echo x | exit 1", "false && exit 1"])
def test_an_exit_of_a_subshell_or_a_branch_not_taken_goes_on(stop):
    text = f"{stop}\ntorchrun --nproc_per_node=8 pretrain_gpt.py --pipeline-model-parallel-size 2\n"
    assert _parse(text).flags["pipeline_model_parallel_size"].value == "2"


def test_an_exit_after_the_command_changes_nothing():
    text = "torchrun --nproc_per_node=8 pretrain_gpt.py --pipeline-model-parallel-size 2\nexit 0\n"
    assert _parse(text).flags["pipeline_model_parallel_size"].value == "2"


def test_an_unconditional_and_chain_exit_stops_too():
    text = 'MODE=mock\n[ "$MODE" = mock ] && exit 0\ntorchrun --nproc_per_node=8 pretrain_gpt.py\n'
    with pytest.raises(NotAPipelineRun) as caught:  # `exit 0`: it ends well, having run no training
        _parse(text)
    assert "ends at line 2 with `exit 0`" in str(caught.value)
    assert "the `torchrun` at line 3 never runs" in str(caught.value)


def test_a_one_line_guard_is_quoted_once():
    text = 'IMAGE=""\nif [ -z "$IMAGE" ]; then exit 1; fi\ntorchrun --nproc_per_node=8 pretrain_gpt.py\n'
    with pytest.raises(ScriptExits) as caught:
        _parse(text)
    assert caught.value.what.count("exit 1; fi") == 1


def test_scan_says_it_does_not_start(tmp_path):
    script = tmp_path / "slurm_pretrain.sh"
    script.write_text(SCRIPT.format(image='""'), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    headline = next(line for line in proc.stdout.splitlines() if line[:1].isupper() and ":" in line
                    and not line.startswith("p2paudit"))
    assert headline.startswith("DOES NOT START: the script exits at line 9"), proc.stdout


# (chatlearn/entrypoint.py itself is followed since rules/chatlearn.toml: tests/realscripts/test_chatlearn.py)
@pytest.mark.parametrize("program", ["python tools/entrypoint.py grpo", "python3 -m chatlearn.main",
                                     "${LAUNCH} train.py"])
def test_an_exit_after_a_program_not_followed_is_no_sure_stop(program):
    """alibaba/ChatLearn @ b7af31a972 scripts/fsdp_vllm/train_fsdp_vllm_qwen3_8b_grpo.sh:47 ends its
    unfollowed `python chatlearn/entrypoint.py grpo ...` with `2>&1 | tee log ; exit ${PIPESTATUS[0]}`:
    the exit comes after that command, which may well train (it was read as DOES NOT START)."""
    text = (f"export exp_name=q\n{program} --config-file grpo.yaml \\\n"
            "    runtime_args.exp_name=${exp_name} \\\n"
            "    2>&1 | tee log_${exp_name}.log ; exit ${PIPESTATUS[0]}\n")
    with pytest.raises(CommandNotFollowed):
        parse_launch(text, "run.sh")


@pytest.mark.parametrize("program", ["bash scripts/pretrain_gpt.sh", 'ssh $HEAD "bash train.sh"',
                                     "colossalai run --nproc_per_node 8 train.py"])
def test_an_exit_after_a_command_not_read_is_no_sure_stop(program):
    """A script not read, a command on another host, a program no rule names: each may be the
    training run, done before the `exit` (review r36-wrapped: they were DOES NOT START)."""
    with pytest.raises(CommandNotFollowed):
        parse_launch(f"{program}\nexit 1\n", "run.sh")


def test_an_exit_after_a_program_that_trains_nothing_still_stops():
    """`pip install`, `echo`, `mkdir` start no training: the exit before the command still stops it."""
    text = "pip install -r req.txt\nmkdir -p logs\nexit 1\ntorchrun --nproc_per_node 2 pretrain_gpt.py\n"
    with pytest.raises(ScriptExits):
        parse_launch(text, "run.sh")
