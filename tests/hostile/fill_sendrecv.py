"""Two gloo ranks exchanging N blocking send/recv pairs, then a barrier: enough ops that their
trace lines outgrow a small filesystem (issue 28 item 3). The same exchange megatron-core's
non-batched path makes (megatron/core/pipeline_parallel/p2p_communication.py, `_p2p_ops`'s
even/odd send-then-recv order; NVIDIA/Megatron-LM core_v0.17.0) reduced to its torch calls.

FILL_PAIRS=N sets the number of pairs (default 4000). Exits 0 when every exchange arrived.
"""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
peer = 1 - rank
out, into = torch.full((4,), float(rank)), torch.empty(4)
for _ in range(int(os.environ.get("FILL_PAIRS", "4000"))):
    if rank == 0:
        dist.send(out, peer)
        dist.recv(into, peer)
    else:
        dist.recv(into, peer)
        dist.send(out, peer)
    assert into[0].item() == peer
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank}: done", flush=True)
