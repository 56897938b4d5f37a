"""An unresolved variable inside an options string costs only what it can change (issue 22 item 3).

The shape is Pai-Megatron-Patch's (alibaba/Pai-Megatron-Patch, examples/baichuan/
run_finetune_megatron_baichuan.sh, commit a098ca5acbdeaf7172ce0393fa309b39a77506db): a
`megatron_options="... --tensor-model-parallel-size ${TP} ..."` string holding known flags next to
values the script takes from its arguments, expanded unquoted into the command.
"""

from __future__ import annotations

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch

OPTIONS = """#!/bin/bash
TP=$1
megatron_options="  \\
        --num-layers 8 \\
        --tensor-model-parallel-size ${TP} \\
        --pipeline-model-parallel-size 4 \\
        --micro-batch-size ${BATCH_SIZE} \\
        --swiglu
        "
torchrun --nproc_per_node 8 pretrain_gpt.py ${megatron_options} --seed 1234
"""


def test_known_flags_of_a_string_with_an_unknown_value_are_kept() -> None:
    config = parse_launch(OPTIONS, "opts.sh")
    flags = {name: flag.value for name, flag in config.flags.items()}
    assert flags["pipeline_model_parallel_size"] == "4"
    assert flags["num_layers"] == "8" and flags["swiglu"] is True and flags["seed"] == "1234"
    assert flags["tensor_model_parallel_size"] == Symbolic("$1")
    assert flags["micro_batch_size"] == Symbolic("${BATCH_SIZE}")
    assert config.positionals == []  # nothing is left over as an unknown argument


def test_the_flags_an_unknown_value_could_override_are_named() -> None:
    config = parse_launch(OPTIONS, "opts.sh")
    [said] = [d for d in config.diagnostics if d.kind == "launch.unknown-values"]
    assert "`--tensor-model-parallel-size $1`" in said.message
    # ${BATCH_SIZE} is the last unknown: written before it are these, which extra words would override
    assert "`--num-layers`, `--tensor-model-parallel-size`, `--pipeline-model-parallel-size`" in said.message


def test_an_unknown_argument_names_what_it_can_shadow() -> None:
    script = OPTIONS.replace("--seed 1234", "--seed 1234 $EXTRA_ARGS --lr 0.1")
    config = parse_launch(script, "opts.sh")
    [said] = [d for d in config.diagnostics if d.kind == "launch.unresolved-args"]
    assert "`$EXTRA_ARGS`" in said.message
    assert "`--pipeline-model-parallel-size`" in said.message and "`--lr`" not in said.message
    assert config.flags["pipeline_model_parallel_size"].value == "4"


def test_partially_known_value_survives_appending_and_arrays() -> None:
    script = ('A="--pipeline-model-parallel-size 2"\nA+=" --tensor-model-parallel-size $TP"\n'
              'B=($A --num-layers 4)\ntorchrun pretrain_gpt.py "${B[@]}" $A\n')
    config = parse_launch(script, "append.sh")
    assert config.flags["pipeline_model_parallel_size"].value == "2"
    assert config.flags["num_layers"].value == "4"


def test_unknown_expansions_on_one_line_are_one_finding() -> None:
    """alibaba/Pai-Megatron-Patch@a098ca5acb examples/llama3/mpi_run_pretrain_llama3.sh appends
    nine option strings it builds under `if`s it cannot decide on one line (`${pr_options}
    ${load_options} ...`): one cause, one finding naming every one of them."""
    config = parse_launch("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
                          "--pipeline-model-parallel-size 2 ${pr_options} ${load_options} "
                          "${te_options}\n", "run.sh")
    said = [d for d in config.diagnostics if d.kind == "launch.unresolved-args"]
    assert len(said) == 1, [d.message for d in said]
    assert all(v in said[0].message for v in ("${pr_options}", "${load_options}", "${te_options}"))
    assert "`--pipeline-model-parallel-size`" in said[0].message  # what they could override
