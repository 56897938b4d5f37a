"""A `for` loop over a list the script states runs its body once per item, so every training
command the loop starts is read with that iteration's values (issue 22 item 4).

Shape from Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a, examples/models/gemma/gemma3_vl/sft.sh):
`PARALLELISM_CONFIGS=("2,1" "1,2")`, `for config in "${PARALLELISM_CONFIGS[@]}"; do
IFS=',' read -r TP PP <<< "$config"; ... model.pipeline_model_parallel_size=$PP; done`: the first
iteration runs PP=1, the second PP=2. Reading only the first (or the loop variable as unknown)
misses the PP=2 run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch

ARRAY = """#!/usr/bin/env bash
PARALLELISM_CONFIGS=("2,1" "1,2")
for config in "${PARALLELISM_CONFIGS[@]}"; do
    IFS=',' read -r TP PP <<< "$config"
    echo "Running with TP=$TP, PP=$PP"
    torchrun --nproc_per_node=8 pretrain_gpt.py \\
        --tensor-model-parallel-size $TP \\
        --pipeline-model-parallel-size $PP
done
"""

WORDS = """#!/bin/bash
for PP in 1 2 4; do
    torchrun --nproc_per_node=8 pretrain_gpt.py --pipeline-model-parallel-size $PP
done
"""


def _pp(text: str, which: int = 0) -> object:
    return parse_launch(text, "loop.sh", which=which).flags["pipeline_model_parallel_size"].value


def test_each_iteration_of_an_array_loop_runs_its_own_command() -> None:
    first, second = (parse_launch(ARRAY, "loop.sh", which=k) for k in (0, 1))
    assert first.commands == second.commands == 2
    assert (first.flags["tensor_model_parallel_size"].value, first.flags["pipeline_model_parallel_size"].value) \
        == ("2", "1")
    assert (second.flags["tensor_model_parallel_size"].value, second.flags["pipeline_model_parallel_size"].value) \
        == ("1", "2")


def test_a_loop_over_literal_words_runs_once_per_word() -> None:
    assert [_pp(WORDS, k) for k in range(3)] == ["1", "2", "4"]


def test_an_unrolled_loop_is_not_reported_as_a_conditional_command() -> None:
    config = parse_launch(WORDS, "loop.sh")
    assert not any(d.kind == "launch.conditional-command" for d in config.diagnostics)


def test_read_from_a_here_string_splits_on_ifs() -> None:
    text = "#!/bin/bash\nIFS=, read -r A B <<< '3,5,7'\ntorchrun pretrain_gpt.py --tensor-model-parallel-size $A " \
           "--pipeline-model-parallel-size $B\n"
    config = parse_launch(text, "read.sh")
    assert config.flags["tensor_model_parallel_size"].value == "3"
    assert config.flags["pipeline_model_parallel_size"].value == "5,7"  # the last name takes the rest


def test_a_loop_over_an_unknown_list_keeps_its_variable_unknown() -> None:
    text = "#!/bin/bash\nfor PP in $SIZES; do\n  torchrun pretrain_gpt.py --pipeline-model-parallel-size $PP\ndone\n"
    config = parse_launch(text, "loop.sh")
    assert config.commands == 1
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_a_loop_that_may_break_is_not_unrolled() -> None:
    text = WORDS.replace("    torchrun", "    [ -f stop ] && break\n    torchrun")
    config = parse_launch(text, "loop.sh")
    assert config.commands == 1
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_which_past_the_last_command_is_refused() -> None:
    with pytest.raises(IndexError):
        parse_launch(WORDS, "loop.sh", which=3)


# --- the scan judges every command the loop runs ---------------------------------------------------

LOOP_SCAN = """#!/bin/bash
export TORCH_DISTRIBUTED_DEBUG=DETAIL
for PP in 1 2; do
    torchrun --nproc_per_node=8 pretrain_gpt.py --num-layers 8 --pipeline-model-parallel-size $PP
done
"""


def _scan(tmp_path: Path, text: str, *args: str) -> dict:
    script = tmp_path / "loop.sh"
    script.write_text(text)
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json",
                           "--target", "megatron-core==0.17.0", *args],
                          capture_output=True, text=True, timeout=300, check=False)
    return json.loads(done.stdout)


@pytest.mark.wheels
def test_the_verdict_covers_every_command_of_the_loop(tmp_path: Path) -> None:
    """PP=1 first (nothing to batch: CLEAN alone), then PP=2 under DETAIL on torch 2.10: the run
    has FINDINGS, and the document shown is the PP=2 command's."""
    doc = _scan(tmp_path, LOOP_SCAN, "--torch", "2.10.0")
    assert doc["verdict"]["status"] == "findings", doc["verdict"]["headline"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2
    several = [f for f in doc["findings"] if f["kind"] == "launch.several-commands"]
    assert several and "2 of 2" in several[0]["message"] and "clean" in several[0]["message"]


@pytest.mark.wheels
def test_a_loop_is_clean_only_when_every_command_is(tmp_path: Path) -> None:
    doc = _scan(tmp_path, LOOP_SCAN, "--torch", "2.11.0")
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert "each of the 2 training commands" in doc["verdict"]["headline"]
