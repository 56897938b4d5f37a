"""MINIMAL DRIVER (not upstream code) for NVIDIA/Megatron-LM PR #5240: interleaved PP with
overlap_p2p_comm=True takes the unbatched _p2p_ops path; each unbatched send/recv on a >2-rank PP
group lazily creates a 2-rank NCCL communicator per pair, and ranks that reach their first
creations in different orders wait on each other. The PR's fix: batched P2P (one
batch_isend_irecv on the existing group).

3 ranks in the interleaved schedule's ring (the last stage's chunk feeds the first stage's next
chunk, megatron/core/pipeline_parallel/p2p_communication.py _p2p_ops, megatron-core 0.17.0): each
rank's first exchange is with a different neighbour.
    torchrun --nproc_per_node 3 driver.py unbatched|batched
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist


def init() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("CASE_TIMEOUT", "30"))))
    return dist.get_rank()


def main() -> None:
    side = sys.argv[1]
    rank = init()
    prev, nxt = (rank - 1) % 3, (rank + 1) % 3
    into_a, into_b, out = torch.empty(1024), torch.empty(1024), torch.full((1024,), float(rank))
    # Rank r first receives from prev (pair prev-r), then sends to next (pair r-next): each rank's
    # first pair communicator is one its first partner reaches only second.
    if side == "unbatched":
        works = [dist.irecv(into_a, prev), dist.isend(out, nxt)]
        for w in works:
            w.wait()
        works = [dist.irecv(into_b, nxt), dist.isend(out, prev)]
    else:
        works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, into_a, prev), dist.P2POp(dist.isend, out, nxt)])
        for w in works:
            w.wait()
        works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, into_b, nxt), dist.P2POp(dist.isend, out, prev)])
    for w in works:
        w.wait()
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
