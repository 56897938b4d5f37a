"""DeepSpeed's pipeline P2P path on 2 gloo ranks, through the installed deepspeed's own modules.

Mirrors deepspeed/runtime/pipe/engine.py (deepspeedai/DeepSpeed v0.18.4, PipelineEngine):
_exec_send_activations calls `p2p.send(outputs, self.next_stage)` and _exec_recv_activations
`p2p.recv(self.pipe_recv_buf, self.prev_stage)`; deepspeed/runtime/pipe/p2p.py send/recv call
deepspeed.comm.send/recv, which reach torch.distributed.send/recv in deepspeed/comm/torch.py
(TorchBackend). The engine itself needs a model and an optimizer; the two calls below are its
lines, made on the real grid (PipelineParallelGrid over PipeDataParallelTopology, PP=2).
`shapes-once` issues DeepSpeed #5696's order (PP-BugBench deepspeed-5696): the engine sends the
activation's shape only for the first batch (`if self.dynamic_shape or self.first_output_send`)
and keeps its first receive buffer, so a longer second batch is received into a smaller buffer.
    torchrun --nproc_per_node 2 deepspeed_p2p.py [shapes-once]
"""

import datetime
import os
import sys

import torch

import deepspeed
import deepspeed.comm as dist
from deepspeed.runtime.pipe import p2p
from deepspeed.runtime.pipe.topology import PipeDataParallelTopology, PipelineParallelGrid


def main() -> None:
    shapes_once = sys.argv[1:] == ["shapes-once"]
    deepspeed.init_distributed(dist_backend="gloo", timeout=datetime.timedelta(seconds=30))
    grid = PipelineParallelGrid(topology=PipeDataParallelTopology(num_pp=2, num_dp=1))
    p2p.init_process_groups(grid)
    stage = grid.get_stage_id()
    for step, seq in enumerate((24, 25) if shapes_once else (24,)):
        if stage == 0:
            outputs = torch.ones(4, seq)
            if step == 0:
                p2p.send(torch.tensor(outputs.shape), 1)  # engine.py _send_tensor_meta
            p2p.send(outputs, 1)  # engine.py _exec_send_activations: p2p.send(outputs, ...)
        else:
            if step == 0:
                shape = torch.empty(2, dtype=torch.int64)
                p2p.recv(shape, 0)  # engine.py _recv_tensor_meta
                pipe_recv_buf = torch.empty(*shape.tolist())
            p2p.recv(pipe_recv_buf, 0)  # engine.py _exec_recv_activations
    print(f"rank {int(os.environ['RANK'])}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
