"""MINIMAL DRIVER (not upstream code) for pytorch/torchtitan #775 (guarded by pytorch PR #144702):
1F1B with fewer microbatches than stages hangs at the first microbatch, the ranks' P2P ops not
pairing up; here the two stages disagree on the microbatch count, a hang of that kind.

2 stages in GPipe order (torch/distributed/pipelining/schedules.py ScheduleGPipe._step_microbatches,
torch 2.13.0: every forward's send, then every backward's): stage 0 runs N_SENDER microbatches,
stage 1 N_RECEIVER.
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
    n = 2 if rank == 0 or side == "fixed" else 4  # stage 1 computed 4 microbatches, stage 0 two
    if rank == 0:
        for _ in range(n):
            dist.send(torch.ones(128), 1)  # SEND_F
        for _ in range(n):
            dist.recv(torch.empty(128), 1)  # RECV_B
    else:
        for _ in range(n):
            dist.recv(torch.empty(128), 0)  # RECV_F
        for _ in range(n):
            dist.send(torch.zeros(128), 0)  # SEND_B
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
