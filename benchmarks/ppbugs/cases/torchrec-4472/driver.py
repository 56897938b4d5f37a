"""MINIMAL DRIVER (not upstream code) for meta-pytorch/torchrec PR #4472 ("Study of NCCL P2P
execution order and buffer size"): the "vanilla PP" exchange on 2 ranks, each rank issuing its
isend before its irecv as separate calls (`p2p_comm_buffer`), against the same exchange in one
batch_isend_irecv (`p2p_batch_comms`). The study's table: separate calls pass at 20 and 32 MiB and
hang at 64 MiB; batched passes at every size.
    torchrun --nproc_per_node 2 driver.py separate|batched [MiB]
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist


def main() -> None:
    side = sys.argv[1]
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("CASE_TIMEOUT", "60"))))
    rank = dist.get_rank()
    peer = 1 - rank
    out, into = torch.full((mib << 18,), float(rank)), torch.empty(mib << 18)
    if side == "separate":
        works = [dist.isend(out, peer), dist.irecv(into, peer)]
    else:
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, peer), dist.P2POp(dist.irecv, into, peer)])
    for work in works:
        work.wait()
    print(f"rank {rank}: received {into[0].item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
