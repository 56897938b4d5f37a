"""Issue 22 item 12: the keys `--set` may name are those of the run's own stack. Another
framework's key (torchtitan's pipeline_parallel_degree, GPT-NeoX's pipe_parallel_size on a
Megatron run; megatron's on a torchtitan or DeepSpeed run) changes nothing there, so it is bad
input (exit 2) naming the closest key of the run's stack, never accepted silently.

The launches: examples/megatron_lm_gpt_pp2.sh (after NVIDIA/Megatron-LM
examples/gpt3/train_gpt3_175b_distributed.sh, core_v0.17.0), examples/glm5_1_lora_pp4.sh (after
modelscope/ms-swift examples/megatron/lora/*.sh), examples/deepspeed_pipe_pp2.sh (after
deepspeedai/DeepSpeedExamples training/pipeline_parallelism/run.sh), GPT-NeoX's
`python ./deepy.py train.py CONFIGS` (EleutherAI/gpt-neox@ea7aefd8f8 README.md:523, written by
tests/realscripts/test_stacks_neox.py) and torchtitan's run_train.sh (pytorch/torchtitan v0.2.2
73a0e697, written by tests/titan/test_titan_config.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import cli
from tests.realscripts.test_stacks_neox import _launch as neox_launch
from tests.titan.test_titan_config import toml_launch

ROOT = Path(__file__).resolve().parents[2]
MEGATRON = str(ROOT / "examples" / "megatron_lm_gpt_pp2.sh")
SWIFT = str(ROOT / "examples" / "glm5_1_lora_pp4.sh")
DEEPSPEED = str(ROOT / "examples" / "deepspeed_pipe_pp2.sh")


def scan(capsys, script: str, *args: str) -> tuple[int, str, str]:
    code = cli.main(["scan", "--config", script, *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def refused(capsys, script: str, key: str, close: str, *args: str) -> None:
    code, out, err = scan(capsys, script, "--set", f"{key}=2", *args)
    # progress lines ("p2paudit: scanning X: ..., 5 s") come before the error on a slow machine
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("p2paudit: scanning ")]
    assert code == 2 and out == "", err
    assert len(lines) == 1 and f"--set {key}" in lines[0], lines
    assert f"did you mean {close}?" in lines[0], lines[0]


@pytest.mark.parametrize(("script", "key", "close"), [
    (MEGATRON, "pipeline_parallel_degree", "pipeline_model_parallel_size"),  # torchtitan's
    (MEGATRON, "pipe_parallel_size", "pipeline_model_parallel_size"),  # GPT-NeoX's
    (SWIFT, "pipeline_parallel_schedule", "pipeline_schedule"),  # torchtitan's
    (DEEPSPEED, "virtual_pipeline_model_parallel_size", "pipeline_model_parallel_size"),  # megatron's
    (DEEPSPEED, "overlap_p2p_comm", "batch_p2p_comm"),  # megatron-core's, derived off the stack
    (DEEPSPEED, "pipeline_parallel_schedule", "pipeline_model_parallel_size"),  # torchtitan's
], ids=["megatron-titan", "megatron-neox", "swift-titan", "deepspeed-megatron", "deepspeed-mcore",
        "deepspeed-titan"])
def test_another_stack_s_key_is_refused_naming_this_stack_s(capsys, script, key, close):
    refused(capsys, script, key, close)


@pytest.mark.parametrize("key", ["virtual_pipeline_model_parallel_size",  # megatron's
                                 "pipe_parallel_size"])  # its YAML's: the size the run hands DeepSpeed is the key
def test_gpt_neox_names_the_key_deepspeed_s_engine_reads(capsys, tmp_path, key):
    script = str(neox_launch(tmp_path, 2))
    refused(capsys, script, key, "pipeline_model_parallel_size")


def test_matrix_over_another_stack_s_key_is_refused(capsys):
    code, out, err = scan(capsys, MEGATRON, "--matrix", "pipeline_parallel_degree=1,2")
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert "--matrix pipeline_parallel_degree" in lines[0]
    assert "did you mean pipeline_model_parallel_size?" in lines[0]


def test_the_stack_s_own_keys_still_apply(capsys, tmp_path):
    """A key of the stack's own rules, one of torch's (every run's) and a derived one."""
    for script, key in ((MEGATRON, "overlap_p2p_comm=true"), (DEEPSPEED, "deepspeed_isend_blocking=true"),
                        (SWIFT, "hidden_size=4096"), (MEGATRON, "world_size=16"),
                        (str(neox_launch(tmp_path, 2)), "pipeline_model_parallel_size=4")):
        code, _, err = scan(capsys, script, "--set", key, "--torch", "2.11.0")
        assert code in (0, 1), (script, key, err)


@pytest.mark.wheels
def test_torchtitan_refuses_megatron_s_keys(capsys, tmp_path):
    script = toml_launch(tmp_path, "")
    args = ("--target", "torchtitan==0.2.2", "--target", "torch", "--torch", "2.10.0")
    refused(capsys, script, "virtual_pipeline_model_parallel_size", "pipeline_model_parallel_size", *args)
    code, _, err = scan(capsys, script, "--set", "pipeline_parallel_degree=2", *args)
    assert code in (0, 1), err
