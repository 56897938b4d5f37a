"""SLURM launches (issue 22 item 4): `sbatch <<EOF` job scripts, `srun python pretrain_gpt.py`,
`srun bash -c "..."`, `sbatch --wrap`, and world sizes taken from `${SLURM_NNODES:-1}` fallbacks
or from the environment of the audit.

The shape of the first script is Megatron-LM's (NVIDIA/Megatron-LM, commit
d98e8a64ddf34856e74b24714e3bedb2f5a39553, examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh):
a PRETRAIN_ARGS array, TRAINING_CMD="... ${PROFILE_CMD} python .../pretrain_gpt.py ${PRETRAIN_ARGS[@]}",
then `sbatch <<EOF` whose job runs `srun --mpi=pmix -l ... bash -x -c "${TRAINING_CMD}"`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from auditor.bash.values import Symbolic
from auditor.config.launch import launch_environ, parse_launch, world_of

SBATCH = """#!/bin/bash
PROFILE=${PROFILE:-0}
PRETRAIN_ARGS=(
    --tensor-model-parallel-size 2
    --pipeline-model-parallel-size 4
)
if [ "${PROFILE}" = 1 ]; then
    PROFILE_CMD="nsys profile -o out"
else
    PROFILE_CMD=""
fi
TRAINING_CMD="
cd ${MEGATRON_PATH};
${PROFILE_CMD} python ${MEGATRON_PATH}/pretrain_gpt.py ${PRETRAIN_ARGS[@]}"
set +e
sbatch <<EOF
#!/bin/bash
#SBATCH --nodes=2

srun \\
    --mpi=pmix -l \\
    --container-image=${CONTAINER_IMAGE} \\
    bash -x -c "${TRAINING_CMD}" 2>&1 | tee ${SLURM_LOGS}/\\${SLURM_JOB_ID}.log

EOF
set -e
"""


def test_sbatch_heredoc_srun_bash_c_python() -> None:
    config = parse_launch(SBATCH, "sbatch.sh")
    assert config.launcher == "srun pretrain_gpt.py"
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    assert config.flags["tensor_model_parallel_size"].value == "2"
    assert [str(w) for w in config.wrapper][:2] == ["sbatch", "srun"]
    # srun without --ntasks-per-node/-N takes the allocation's: `#SBATCH --nodes=2` in the job script,
    # no task count: unknown here, and it says how to give it
    assert isinstance(config.nproc_per_node, Symbolic) and config.nnodes == 2
    assert "SLURM_NTASKS_PER_NODE=N p2paudit" in config.world_source["nproc_per_node"]
    told = parse_launch(SBATCH, "sbatch.sh", environ={"SLURM_NNODES": "2", "SLURM_NTASKS_PER_NODE": "8"})
    assert told.world_size == 16
    assert "the environment of this audit" in told.world_source["nnodes"]


def test_srun_python_sizes_the_world_with_its_own_options() -> None:
    config = parse_launch("srun -N 2 --ntasks-per-node=8 -l python -u pretrain_gpt.py "
                          "--pipeline-model-parallel-size 4\n", "s.sh")
    assert (config.launcher, config.nproc_per_node, config.nnodes) == ("srun pretrain_gpt.py", 8, 2)
    assert config.flags["pipeline_model_parallel_size"].value == "4"


def test_srun_in_front_of_torchrun_is_a_wrapper() -> None:
    config = parse_launch("srun --nodes=1 torchrun --nproc_per_node 4 pretrain_gpt.py\n", "t.sh")
    assert config.launcher == "torchrun pretrain_gpt.py" and config.nproc_per_node == 4


def test_sbatch_wrap() -> None:
    config = parse_launch('sbatch --nodes=2 --wrap="srun torchrun --nproc_per_node 8 pretrain_gpt.py '
                          '--pipeline-model-parallel-size 4"\n', "w.sh")
    assert config.launcher == "torchrun pretrain_gpt.py"
    assert config.flags["pipeline_model_parallel_size"].value == "4"


def test_a_fallback_world_size_says_so_and_the_environment_overrides_it() -> None:
    # Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh (same commit): NUM_NODES=${SLURM_NNODES:-1}
    script = ("NUM_NODES=${SLURM_NNODES:-1}\ntorchrun --nnodes $NUM_NODES --nproc_per_node 8 "
              "pretrain_gpt.py --pipeline-model-parallel-size 2\n")
    config = parse_launch(script, "f.sh")
    assert config.nnodes == 1
    assert "fallback for SLURM_NNODES" in config.world_source["nnodes"]
    assert world_of(config, None)["world_given"] is True  # so the header says where it came from
    told = parse_launch(script, "f.sh", environ=launch_environ({"SLURM_NNODES": "4", "HOME": "/x"}))
    assert told.nnodes == 4 and told.world_size == 32


def test_only_world_size_variables_come_from_the_audits_environment() -> None:
    environ = launch_environ({"SLURM_NNODES": "2", "TORCH_DISTRIBUTED_DEBUG": "DETAIL", "NNODES": "3"})
    assert environ == {"NNODES": "3", "SLURM_NNODES": "2"}


def test_a_script_through_a_pipe_is_read_once(tmp_path: Path) -> None:
    # issue 28 (low): `--config /dev/stdin` was read twice, the second read empty: "no training command"
    from auditor.scan import read_config

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    text = "# megatron-core==0.17.0\ntorchrun pretrain_gpt.py --pipeline-model-parallel-size 2\n"
    writer = threading.Thread(target=lambda: fifo.write_text(text))
    writer.start()
    launch, _ = read_config(str(fifo), None)
    writer.join(timeout=10)
    assert launch.flags["pipeline_model_parallel_size"].value == "2"


def test_sbatch_directives_size_the_allocation() -> None:
    # Megatron-LM examples/pretrain_gpt3_175B.sh (NVIDIA/Megatron-LM commit 4f8e9ac412, 23.06):
    # `#SBATCH <SLURM OPTIONS> --nodes=128 --exclusive --ntasks-per-node=8`, then `srun ... sh -c "${run_cmd}"`
    script = ("#!/bin/bash\n\n#SBATCH <SLURM OPTIONS> --nodes=128 --exclusive --ntasks-per-node=8 --job-name=x\n\n"
              'run_cmd="python pretrain_gpt.py --pipeline-model-parallel-size 16"\n'
              'srun -l --container-image "nvcr.io/nvidia/pytorch:20.12-py3" sh -c "${run_cmd}"\n'
              "#SBATCH --nodes=2\n")  # after the first command: sbatch ignores it
    config = parse_launch(script, "175b.sh")
    assert (config.launcher, config.nnodes, config.nproc_per_node) == ("srun pretrain_gpt.py", 128, 8)
    assert "#SBATCH at line 3" in config.world_source["nnodes"]
    told = parse_launch(script, "175b.sh", environ={"SLURM_NNODES": "4"})
    assert told.nnodes == 4  # the audit's environment wins over the directive
    inner = parse_launch(SBATCH.replace("#SBATCH --nodes=2", "#SBATCH --nodes=2 --ntasks-per-node=4"), "s.sh")
    assert inner.world_size == 8
