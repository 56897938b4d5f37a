"""DeepSpeed's pipeline P2P path on 2 gloo ranks, through the installed deepspeed's own modules.

Mirrors deepspeed/runtime/pipe/engine.py (deepspeedai/DeepSpeed v0.18.4, PipelineEngine):
_exec_send_activations calls `p2p.send(outputs, self.next_stage)` and _exec_recv_activations
`p2p.recv(self.pipe_recv_buf, self.prev_stage)`; deepspeed/runtime/pipe/p2p.py send/recv call
deepspeed.comm.send/recv, which reach torch.distributed.send/recv in deepspeed/comm/torch.py
(TorchBackend). The engine itself needs a model and an optimizer; the two calls below are its
lines, made on the real grid (PipelineParallelGrid over PipeDataParallelTopology, PP=2).
    torchrun --nproc_per_node 2 deepspeed_p2p.py
"""

import os

import torch

import deepspeed
import deepspeed.comm as dist
from deepspeed.runtime.pipe import p2p
from deepspeed.runtime.pipe.topology import PipeDataParallelTopology, PipelineParallelGrid


def main() -> None:
    deepspeed.init_distributed(dist_backend="gloo")
    grid = PipelineParallelGrid(topology=PipeDataParallelTopology(num_pp=2, num_dp=1))
    p2p.init_process_groups(grid)
    stage = grid.get_stage_id()
    if stage == 0:
        outputs = torch.ones(4, 8)
        p2p.send(outputs, 1)  # engine.py _exec_send_activations: p2p.send(outputs, self.next_stage)
    else:
        pipe_recv_buf = torch.empty(4, 8)
        p2p.recv(pipe_recv_buf, 0)  # engine.py _exec_recv_activations
        assert pipe_recv_buf.sum().item() == 32
    print(f"rank {int(os.environ['RANK'])}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
