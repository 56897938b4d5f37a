"""MINIMAL DRIVER (not upstream code) for NVIDIA/nccl #479: two ranks each send, then receive.

The issue's program, in torch on 2 gloo ranks: rank 0 sends x0 then receives x1, rank 1 sends x1
then receives x0, each a blocking call (https://github.com/NVIDIA/nccl/issues/479). The fix given
there (sjeaugey): group the send and the receive into one ncclGroupStart/End, which torch spells
batch_isend_irecv.
    torchrun --nproc_per_node 2 driver.py buggy|fixed
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist

NUMEL = 16 << 20  # 64 MiB of float32: above every transport's measured buffering (rules/nccl.toml)


def main() -> None:
    side = sys.argv[1]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("CASE_TIMEOUT", "30"))))
    rank = dist.get_rank()
    peer = 1 - rank
    out, into = torch.full((NUMEL,), float(rank)), torch.empty(NUMEL)
    if side == "buggy":
        dist.send(out, peer)  # the step 1 on both ranks: send first
        dist.recv(into, peer)
    else:
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out, peer), dist.P2POp(dist.irecv, into, peer)]):
            work.wait()
    print(f"rank {rank}: received {into[0].item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
