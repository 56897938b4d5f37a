"""Commands beside the training command that train nothing, and words the walk must read as bash
does, so that the run is followed (turn 18, h38-rl).

- `ray stop --force` (Ray's CLI: stops Ray's processes on this machine) trains nothing, where
  `ray job submit -- python3 train.py` does: THUDM/slime at commit
  624b824a898ab0ec1fcb4d373004c7f3852bf515, scripts/low_precision/run-qwen3-4b-fp8.sh, runs it
  (:6) before `set -ex` (:13) and a `source "${SCRIPT_DIR}/../scripts/models/qwen3-4B.sh"` (:26-27)
  of a file the tree does not have: the script ends there, before any training command.
- `srun --container-image="$IMAGE_NAME" --container-mounts="$PROJECT_PATH:/openrlhf,..." bash -c
  "... torchrun ... -m ${training_commands}"`, PROJECT_PATH=$(cd ../../; pwd): an option whose value
  is not known statically is still srun's option, not the program. And `source
  ./train_dpo_llama.sh slurm` gives the sourced file its $1, which keeps it from launching the
  command itself: OpenRLHF/OpenRLHF at commit 3c3be6234e0cb353e76bb8019947db9dfe99fca7,
  examples/scripts/train_nonrl_slurm.sh :16-19, :28, :36-40 and examples/scripts/train_dpo_llama.sh
  :3-4, :35-37.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import ScriptExits, parse_launch

SLIME = """#!/bin/bash

# for rerun the task
pkill -9 sglang
sleep 3
ray stop --force
pkill -9 ray

set -ex

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"
source "${SCRIPT_DIR}/../scripts/models/qwen3-4B.sh"

ray job submit --address="http://127.0.0.1:8265" \\
   -- python3 train.py \\
   --actor-num-nodes 1 \\
   ${MODEL_ARGS[@]}
"""


def test_ray_stop_before_a_failed_source_leaves_the_script_ending_there(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'slime'\n")
    (tmp_path / "scripts" / "models").mkdir(parents=True)
    (tmp_path / "scripts" / "models" / "qwen3-4B.sh").write_text("MODEL_ARGS=(--num-layers 36)\n")
    (tmp_path / "scripts" / "low_precision").mkdir()
    script = tmp_path / "scripts" / "low_precision" / "run.sh"
    script.write_text(SLIME)
    with pytest.raises(ScriptExits) as caught:
        parse_launch(SLIME, str(script))
    assert "exits at line 12" in str(caught.value)


def test_a_ray_subcommand_that_may_run_the_command_is_still_not_followed(tmp_path: Path) -> None:
    # `ray submit CLUSTER.yaml train.py` runs a script on the cluster: not one of those that train nothing
    script = tmp_path / "run.sh"
    text = "ray stop --force\nray submit cluster.yaml train.py\n"
    with pytest.raises(Exception) as caught:
        parse_launch(text, str(script))
    assert "line 2 runs `ray`, which is not followed" in str(caught.value)
    assert "line 1" not in str(caught.value)


DPO = """set -x

read -r -d '' training_commands <<EOF
openrlhf.cli.train_dpo \\
   --ds.zero_stage 3
EOF

if [[ ${1} != "slurm" ]]; then
    deepspeed --module $training_commands
fi
"""
SLURM = """#!/bin/bash
#SBATCH -N 1
readonly training_script="train_dpo_llama.sh"
readonly GPUS_PER_NODE=8
readonly PROJECT_PATH=$(cd ../../; pwd)
readonly IMAGE_NAME="nvcr.io/nvidia/pytorch:26.03-py3"

source ./${training_script} slurm

srun --container-image="$IMAGE_NAME" \\
    --container-mounts="$PROJECT_PATH:/openrlhf,$HOME/.cache:/root/.cache" \\
    bash -c " cd /openrlhf; pip install . ; torchrun \\
--nproc_per_node $GPUS_PER_NODE --nnodes 1 -m ${training_commands}"
"""


def test_an_option_whose_value_is_unknown_stays_the_wrappers(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # `source ./...` opens it from the launch directory, where the audit runs
    (tmp_path / "train_dpo_llama.sh").write_text(DPO)
    config = parse_launch(SLURM, str(tmp_path / "train_nonrl_slurm.sh"))
    assert config.launcher.startswith("torchrun")
    assert config.command_line == 12  # the `bash -c` line, as the walk reads it


def test_source_with_arguments_gives_the_file_its_positional_parameters(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train_dpo_llama.sh").write_text(DPO)
    text = "source ./train_dpo_llama.sh {arg}\ntorchrun --nproc_per_node 8 -m ${{training_commands}}\n"
    given = parse_launch(text.format(arg="slurm"), str(tmp_path / "run.sh"))
    assert given.launcher.startswith("torchrun")  # `[[ ${1} != "slurm" ]]` is false: no deepspeed
    other = parse_launch(text.format(arg="local"), str(tmp_path / "run.sh"))
    assert other.launcher.startswith("deepspeed")


def test_past_a_sourced_argument_that_may_split_the_count_and_the_next_are_unknown(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """`source conf.sh $EXTRA 4`: bash splits $EXTRA into any number of words, so conf.sh's $# and
    $2 are not known (r38-rl: `PP=${2:-1}` read as 4 there would be a guess)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf.sh").write_text("PP=${2:-1}\n")
    text = ("source ./conf.sh {args}\n"
            "torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size $PP\n")
    split = parse_launch(text.format(args="$EXTRA 4"), str(tmp_path / "run.sh"))
    assert not isinstance(split.flags["pipeline_model_parallel_size"].value, str)
    quoted = parse_launch(text.format(args='"$EXTRA" 4'), str(tmp_path / "run.sh"))
    assert quoted.flags["pipeline_model_parallel_size"].value == "4"  # one word, whatever it holds
