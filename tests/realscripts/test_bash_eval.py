"""The training command assembled in a variable and run with `eval`, and settings chosen by an
if/case on a variable the script assigned a literal (issue 22 item 4).

Shapes from Pai-Megatron-Patch (alibaba/Pai-Megatron-Patch, commit
a098ca5acbdeaf7172ce0393fa309b39a77506db, examples/baichuan/run_finetune_megatron_baichuan.sh):
`if [ $ENV = dsw ]; then ... elif [ $ENV = dlc ]`, `if [ $MODEL_SIZE = 7B ]; then NUM_LAYERS=32`,
`run_cmd="torchrun $DISTRIBUTED_ARGS finetune.py\\n ${megatron_options} ${pr_options}"`, `eval ${run_cmd}`.
"""

from __future__ import annotations

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch

SCRIPT = """#!/bin/bash
ENV=dsw
MODEL_SIZE=7B
if [ $ENV = dsw ]; then
export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
NNODES=1
GPUS_PER_NODE=8
elif [ $ENV = dlc ]; then
NNODES=${WORLD_SIZE}
GPUS_PER_NODE=${KUBERNETES_CONTAINER_RESOURCE_GPU}
fi
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES"
case $MODEL_SIZE in
  7B) NUM_LAYERS=32 ; PP=4 ;;
  13B) NUM_LAYERS=40 ; PP=8 ;;
esac
megatron_options="  \\
        --num-layers ${NUM_LAYERS} \\
        --pipeline-model-parallel-size ${PP} \\
        --tensor-model-parallel-size ${TP}"
run_cmd="torchrun $DISTRIBUTED_ARGS finetune_megatron_baichuan13b.py
 ${megatron_options} ${pr_options}"
echo ${run_cmd}
RUN
"""


@pytest.mark.parametrize("run", ["eval ${run_cmd}", 'eval "${run_cmd}"', "${run_cmd}"])
def test_command_in_a_variable_is_followed(run: str) -> None:
    config = parse_launch(SCRIPT.replace("RUN", run), "run.sh")
    flags = {name: flag.value for name, flag in config.flags.items()}
    assert config.launcher == "torchrun finetune_megatron_baichuan13b.py"
    assert flags["pipeline_model_parallel_size"] == "4" and flags["num_layers"] == "32"  # case 7B)
    assert flags["tensor_model_parallel_size"] == Symbolic("${TP}")
    assert (config.nproc_per_node, config.nnodes) == (8, 1)  # the ENV=dsw branch, decided
    assert not any(d.kind == "launch.conditional-command" for d in config.diagnostics)


def test_eval_reads_quotes_and_inline_environment_again() -> None:
    script = ('PP=4\ncmd="NCCL_DEBUG=INFO torchrun --nproc_per_node 2 pretrain_gpt.py '
              '--pipeline-model-parallel-size \\"$PP\\" --data-path \\"a b\\""\neval "$cmd" 2>&1 | tee log\n')
    config = parse_launch(script, "q.sh")
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    assert config.flags["data_path"].value == "a b"
    assert config.env["NCCL_DEBUG"].value == "INFO"


def test_an_undecidable_branch_stays_unknown() -> None:
    config = parse_launch(SCRIPT.replace("ENV=dsw", "ENV=$1").replace("RUN", "eval $run_cmd"), "u.sh")
    assert isinstance(config.nnodes, Symbolic)
