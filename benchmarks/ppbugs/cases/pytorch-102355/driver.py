"""MINIMAL DRIVER (not upstream code) for pytorch/pytorch #102355 (fixed by PR #110408): the
`batch_isend_irecv` docstring example in torch/distributed/distributed_c10d.py sent
`torch.arange(2) + 2 * rank` (int64) around a ring into `recv_tensor = torch.randn(2)` (float32);
NCCL delivered the bytes silently, so every rank printed garbage. torch 2.13.0's example creates
both with `dtype=torch.float32` (the fixed side).
    torchrun --nproc_per_node 3 driver.py buggy|fixed
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
    world_size = dist.get_world_size()
    dtype = None if side == "buggy" else torch.float32
    send_tensor = torch.arange(2, dtype=dtype) + 2 * rank
    recv_tensor = torch.randn(2, dtype=torch.float32)
    send_op = dist.P2POp(dist.isend, send_tensor, (rank + 1) % world_size)
    recv_op = dist.P2POp(dist.irecv, recv_tensor, (rank - 1 + world_size) % world_size)
    reqs = dist.batch_isend_irecv([send_op, recv_op])
    for req in reqs:
        req.wait()
    print(f"rank {rank}: done {recv_tensor.tolist()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
