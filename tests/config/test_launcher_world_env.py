"""srun and mpirun start their processes but set no WORLD_SIZE: one the script exports reaches
each process as set, and torch's env:// rendezvous takes the world size from it, not from the
launcher's count of tasks (review r40-notpipe item 1: `export ... WORLD_SIZE=2` around a one-task
`srun --mpi=pmix python scripts/relay.py` was read as one rank). The world follows the launcher
(config.launcher `_env_world`, the rules' `world_size_env`): where the value is the launcher's own
count (`export WORLD_SIZE=${SLURM_NTASKS}`, NVIDIA-NeMo/Megatron-Bridge 067f987df0
examples/models/stepfun/step37/slurm_pretrain.sh:133, inside the `srun ... bash -c` task script)
the world is the launcher's; else it is unknown, naming the variable and its line.
"""

from __future__ import annotations

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch

HEAD = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\nset -euo pipefail\n"
RUN = "python scripts/relay.py --ckpt /data/hidden.pt\n"


@pytest.mark.parametrize("body", [
    f"export MASTER_ADDR=node0 MASTER_PORT=29500 WORLD_SIZE=2 RANK=${{RANK:-0}}\nsrun --mpi=pmix {RUN}",
    f"export WORLD_SIZE=2\nmpirun -np 1 {RUN}",
    f"srun --export=ALL,WORLD_SIZE=2 {RUN}",
])
def test_a_world_size_the_script_sets_for_srun_or_mpirun_decides_the_world(body: str) -> None:
    config = parse_launch(HEAD + body, "job.sh", environ={})
    assert isinstance(config.nproc_per_node, Symbolic) and config.world_size is None
    why = config.world_source["nproc_per_node"]
    assert "WORLD_SIZE=2" in why and "job.sh:" in why and "--set world_size=N" in why


@pytest.mark.parametrize("body, world", [
    (f"export WORLD_SIZE=1\nsrun {RUN}", 1),
    (f"srun --ntasks-per-node=4 bash -c 'export WORLD_SIZE=${{SLURM_NTASKS}}; {RUN.strip()}'\n", 4),
    (f"srun {RUN}", 1),
    (f"export WORLD_SIZE=2\nmpirun -np 2 {RUN}", 2),
])
def test_a_world_size_that_is_the_launchers_own_count_keeps_it(body: str, world: int) -> None:
    config = parse_launch(HEAD + body, "job.sh", environ={})
    assert config.world_size == world, config.world_source


def test_torchrun_sets_the_world_size_itself() -> None:
    config = parse_launch(HEAD + f"export WORLD_SIZE=2\ntorchrun --nproc_per_node 4 {RUN.split(' ', 1)[1]}",
                          "job.sh", environ={})
    assert config.world_size == 4
