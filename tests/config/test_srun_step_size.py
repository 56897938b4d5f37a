"""srun's own options as srun reads them (review r43-scan-shell, s07/s08/t01/t03): srun parses
them with getopt_long, so a short option takes its value attached (`-N2` is `-N 2`; before, an
option "N2" that took the next word, `--ntasks-per-node=4`, as its value), and `-n`/`--ntasks`
is the step's whole task count, its world (before, ignored: `srun -n 4` under an allocation of 16
tasks was read as 16 ranks, a false CLEAN at PP 8). `-n $SLURM_NTASKS` is the allocation's own
count, which its nodes and tasks per node give. Rules: [[launcher]] srun `ntasks_flags`,
[wrappers] option_grammar srun. The `#SBATCH` head of NVIDIA/Megatron-LM 0d7e02bd26-era job
scripts (`--nodes=2`, `--ntasks-per-node=8`) around `srun python pretrain_gpt.py`.
"""

from __future__ import annotations

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch

HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
RUN = ("python pretrain_gpt.py --num-layers 24 --hidden-size 1024 --num-attention-heads 16 "
       "--micro-batch-size 1 --global-batch-size 48 --seq-length 1024 --max-position-embeddings 1024 "
       "--pipeline-model-parallel-size 3\n")


@pytest.mark.parametrize("options, world", [
    ("-N2 --ntasks-per-node=4", 8),
    ("-N 1 -n 16", 16),
    ("-n 4", 4),
    ("-n4", 4),
    ("--ntasks=4", 4),
    ("--ntasks-per-node=8 -N 1", 8),
    ("-N1 -c8 --ntasks-per-node=2", 2),
    ("-n $SLURM_NTASKS", 16),  # the allocation's count
    ("", 16),
    # review r44-scan s06/s07/s13: bundled short options (`-ln6` is -l -n 6) and srun's optional
    # values, only attached (opt.c optstring "I::" "K::"): `-I60`, `-K1`, `-I` alone takes no word
    ("-ln6", 6),
    ("-l -n6", 6),
    ("-I60 -n6", 6),
    ("-K1 -n 6", 6),
    ("-I -n 6", 6),
    ("-lN1 --ntasks-per-node=6", 6),
])
def test_the_step_has_the_tasks_srun_gives_it(options: str, world: int) -> None:
    config = parse_launch(f"{HEAD}srun {options} {RUN}", "job.sh", environ={})
    assert config.script == "pretrain_gpt.py" and config.world_size == world, config.world_source


def test_a_step_count_not_known_says_where_the_world_came_from() -> None:
    config = parse_launch(f"{HEAD}srun -n $TASKS {RUN}", "job.sh", environ={})
    assert isinstance(config.nproc_per_node, Symbolic) and config.world_size is None
    assert "-n $TASKS (job.sh:4)" in config.world_source["nproc_per_node"]


def test_a_world_size_exported_for_a_step_srun_sizes_otherwise_is_unknown() -> None:
    """`export WORLD_SIZE=$SLURM_NTASKS` (the allocation's 16) for `srun -N2 --ntasks-per-node=4`
    (8 tasks): torch's env:// takes 16, the step starts 8; the two differ, said as such."""
    config = parse_launch(f"{HEAD}export WORLD_SIZE=$SLURM_NTASKS\nsrun -N2 --ntasks-per-node=4 {RUN}",
                          "job.sh", environ={})
    assert config.world_size is None
    why = config.world_source["nproc_per_node"]
    assert "allocation's task count" in why and "--ntasks-per-node" in why and "--set world_size=N" in why
