"""Writes real Flight Recorder dumps (JSON and pickle, one file per rank) from a small torch.distributed
program: the fixtures of tests/dynamic/test_flight_recorder.py.

    TORCH_FR_BUFFER_SIZE=2000 torchrun --nproc_per_node 2 tests/fr_dumps/make_dumps.py OUT [gloo|nccl] [hang]

Each rank runs an all_reduce on the world, then on a 2-rank group named "pp" an all_reduce, a
send/recv, an isend/irecv pair, a batch_isend_irecv and a last all_reduce. With `hang`, rank 1 skips its last all_reduce
and rank 0's stays pending when the dumps are written. Dumps are written through torch's own calls into
OUT/json/rankN.json (`_dump_fr_trace_json`) and OUT/pickle/fr_trace_rank_N (`_dump_fr_trace`).
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def main() -> None:
    out, backend = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "gloo")
    hang = "hang" in sys.argv[3:]
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        torch.cuda.set_device(device)
    dist.init_process_group(backend, timeout=timedelta(seconds=60))
    peer = (rank + 1) % world if rank % 2 == 0 else rank - 1
    t = torch.ones(4, device=device)
    dist.all_reduce(t)
    pp = dist.new_group(list(range(world)), group_desc="pp")
    dist.all_reduce(t, group=pp)
    if world > 1:
        if rank % 2 == 0:
            dist.send(torch.ones(8, device=device), peer, group=pp)
            dist.isend(torch.ones(16, device=device), peer, group=pp).wait()
        else:
            dist.recv(torch.zeros(8, device=device), peer, group=pp)
            dist.irecv(torch.zeros(16, device=device), peer, group=pp).wait()
        ops = [dist.P2POp(dist.isend, torch.ones(32, device=device), peer, group=pp),
               dist.P2POp(dist.irecv, torch.zeros(32, device=device), peer, group=pp)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    pending = None
    if not (hang and rank == 1):
        pending = dist.all_reduce(torch.ones(64, device=device), group=pp, async_op=True)
    if hang:
        time.sleep(3)
    else:
        pending.wait()
        time.sleep(0.5)  # gloo marks an entry retired a moment after its wait returns
    if backend == "nccl":
        torch.cuda.synchronize()
        time.sleep(1)
    c10d = torch._C._distributed_c10d
    for kind, name, dump in (("json", f"rank{rank}.json", c10d._dump_fr_trace_json),
                             ("pickle", f"fr_trace_rank_{rank}", c10d._dump_fr_trace)):
        os.makedirs(os.path.join(out, kind), exist_ok=True)
        with open(os.path.join(out, kind, name), "wb") as f:
            f.write(dump(includeCollectives=True))
    if hang:
        time.sleep(3)  # keep the peer alive until both dumps are written
        os._exit(0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
