"""MINIMAL DRIVER (not upstream code) for hpcaitech/ColossalAI #1180: with pipeline parallelism
only (send_split=False), colossalai/communication/p2p.py process_object_to_send returned an empty
object_send_list (commit dd0420 on master), so the forward send issued no op while the next
stage posted its receive: both stages of a 2-stage 1F1B step then wait (the next stage for the
activation, the first for the gradient). The fix: append the tensor when not splitting.
    torchrun --nproc_per_node 2 driver.py buggy|fixed
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
    act, grad = torch.ones(256), torch.empty(256)
    if rank == 0:
        object_send_list = [act] if side == "fixed" else []  # the bug: nothing appended
        for tensor in object_send_list:
            dist.send(tensor, 1)  # send_forward
        dist.recv(grad, 1)  # recv_backward
    else:
        dist.recv(act, 0)  # recv_forward
        dist.send(torch.zeros(256), 0)  # send_backward
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
