"""Two gloo ranks: one batch_isend_irecv of an isend and an irecv each way, then a send/recv,
then a barrier: a run that completes (issue 9). Recorded by tests/dynamic/test_record_runs.py.

EXCHANGE_FLOATS=N sets the tensors' length (default 4): at 4 Mi floats (16 MiB) the same order,
run op by op over NCCL's network transport, would hang; gloo completes it at any size.
"""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
peer = 1 - rank
size = int(os.environ.get("EXCHANGE_FLOATS", "4"))
out, into = torch.full((size,), float(rank)), torch.empty(size)
for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out, peer),
                                    dist.P2POp(dist.irecv, into, peer)]):
    work.wait()
assert into[0].item() == peer
if rank == 0:
    dist.send(out, 1)
else:
    dist.recv(into, 0)
dist.barrier()
dist.destroy_process_group()
