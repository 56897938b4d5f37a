"""One `#SBATCH` option sets every variable Slurm sets from it (issue 22 item 4, dev10).

sbatch(1), OUTPUT ENVIRONMENT VARIABLES: `-N/--nodes` gives the job SLURM_JOB_NUM_NODES (and
SLURM_NNODES for backwards compatibility), `--gpus-per-node` SLURM_GPUS_PER_NODE, `-n/--ntasks`
SLURM_NTASKS (and SLURM_NPROCS). The script reproduces NVIDIA-NeMo/Megatron-Bridge
examples/models/stepfun/step35/slurm_pretrain.sh (commit 067f987df03b8355b03192d88d70f1709fedf51a,
:37-40, :104-105, :186-189): `#SBATCH --nodes=2`, `#SBATCH --gpus-per-node=8`, then
`NUM_NODES=${SLURM_JOB_NUM_NODES:-8}`, `GPUS_PER_NODE=${SLURM_GPUS_PER_NODE:-8}` and
`srun --nodes=${NUM_NODES} --ntasks-per-node=${GPUS_PER_NODE} ...`: 2 x 8 = 16 ranks in the job
the directives ask for, not the script's fallback of 8 nodes.
"""

from __future__ import annotations

from auditor.config.launch import parse_launch

JOB = """#!/bin/bash
#SBATCH --job-name=step35-pretrain
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --exclusive

set -euo pipefail
NUM_NODES=${SLURM_JOB_NUM_NODES:-8}
GPUS_PER_NODE=${SLURM_GPUS_PER_NODE:-4}
srun --nodes=${NUM_NODES} --ntasks-per-node=${GPUS_PER_NODE} \\
    python pretrain_gpt.py --pipeline-model-parallel-size 2
"""


def test_the_nodes_directive_sets_slurm_job_num_nodes_too() -> None:
    config = parse_launch(JOB, "job.sh")
    assert (config.nnodes, config.nproc_per_node, config.world_size) == (2, 8, 16)
    assert config.env["SLURM_JOB_NUM_NODES"].line == 3 and config.env["SLURM_NNODES"].line == 3
    assert config.env["SLURM_GPUS_PER_NODE"].value == "8"


def test_the_audits_environment_still_wins() -> None:
    config = parse_launch(JOB, "job.sh", environ={"SLURM_JOB_NUM_NODES": "4"})
    assert config.nnodes == 4 and config.env["SLURM_NNODES"].value == "2"


def test_a_typed_gpu_count_is_no_number() -> None:
    # `--gpus-per-node=h100:8` sets SLURM_GPUS_PER_NODE to "h100:8": no count to read here
    config = parse_launch(JOB.replace("--gpus-per-node=8", "--gpus-per-node=h100:8"), "job.sh")
    assert config.nnodes == 2
    assert "SLURM_GPUS_PER_NODE" not in config.env
