"""pytorch #113376: a send of 3 elements against a receive of RECV_NUMEL (4 or 5), on 2 gloo ranks.

The issue's own reproducer (batch_isend_irecv with a mismatched count), on CPU. Run under torchrun:
    torchrun --nproc_per_node 2 driver.py [RECV_NUMEL]
RECV_NUMEL=3 is the fixed side (sizes agree). Prints what each rank saw; exits 0 when the program ends.
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist

SEND_NUMEL = 3


def main() -> None:
    recv_numel = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("CASE_TIMEOUT", "20"))))
    rank = dist.get_rank()
    if rank == 0:
        send = torch.arange(1, SEND_NUMEL + 1, dtype=torch.float32)
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, send, 1)])
    else:
        recv = torch.zeros(recv_numel, dtype=torch.float32)
        works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, recv, 0)])
    for w in works:
        w.wait()
    print(f"rank {rank}: done" + (f", received {recv.tolist()}" if rank == 1 else ""), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
