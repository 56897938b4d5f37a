"""Two gloo ranks exchanging STEPS batches of one isend to the next rank and one irecv from the
previous, then a barrier: the ring exchange megatron-core's batched path makes
(megatron/core/pipeline_parallel/p2p_communication.py, `_batched_p2p_ops`: a list of P2POp
handed to torch.distributed.batch_isend_irecv, each request waited; NVIDIA/Megatron-LM
core_v0.17.0) reduced to its torch calls. Under a small `ulimit -f` the recorder stops between
the two ops of a batch on one or both ranks.

STEPS=N sets the number of batches (default 400). Exits 0 when every exchange arrived.
"""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
nxt, prv = (rank + 1) % world, (rank - 1) % world
out, into = torch.full((4,), float(rank)), torch.empty(4)
for _ in range(int(os.environ.get("STEPS", "400"))):
    for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, out, nxt),
                                       dist.P2POp(dist.irecv, into, prv)]):
        req.wait()
    assert into[0].item() == prv
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank}: done", flush=True)
