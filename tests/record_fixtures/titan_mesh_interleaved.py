"""torchtitan's PP construct on 2 gloo ranks: a device mesh unflattened into ("pp", "batch") and
torch's Interleaved1F1B over two stages a rank, on the mesh's "pp" group.

Reproduces torchtitan 0.2.2 (PyPI; pytorch/torchtitan tag v0.2.2):
torchtitan/distributed/parallel_dims.py ParallelDims.build_mesh (`init_device_mesh(device_type,
(world_size,), mesh_dim_names=("world",))`, then `unflatten_mesh` ->
`world_mesh._unflatten(0, degrees, names, backend_override={...: "fake"})`) and
torchtitan/distributed/pipeline_parallel.py (stages `pp_rank + i * pp`, the schedule class built
over them with the "pp" group). Every new_group's site is this file's mesh line (DeviceMesh is
torch's wrapper around new_group); every P2P op's site is `schedule.step`, the line that chose
it torch's `_PipelineScheduleRuntime` action.
    torchrun --nproc_per_node 2 titan_mesh_interleaved.py
"""

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.pipelining import PipelineStage, ScheduleInterleaved1F1B

PP, STAGES_PER_RANK, MICROBATCHES = 2, 2, 4


def main() -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    world = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("world",))
    mesh = world._unflatten(0, (PP, 1), ("pp", "batch"), backend_override={"batch": "fake"})
    pp_group = mesh["pp"].get_group()
    rank = mesh["pp"].get_local_rank()
    total = PP * STAGES_PER_RANK
    indices = [rank + i * PP for i in range(STAGES_PER_RANK)]
    stages = [PipelineStage(nn.Linear(8, 8), i, total, torch.device("cpu"), group=pp_group)
              for i in indices]
    schedule = ScheduleInterleaved1F1B(stages, n_microbatches=MICROBATCHES,
                                       loss_fn=lambda out, target: (out - target).pow(2).mean())
    batch = torch.ones(MICROBATCHES * 2, 8)
    if 0 in indices:
        schedule.step(batch)
    else:
        schedule.step(target=torch.zeros_like(batch), losses=[])
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
