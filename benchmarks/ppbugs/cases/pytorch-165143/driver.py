"""MINIMAL DRIVER (not upstream code) for pytorch/pytorch #165143 (fixed by PR #165539): before the
first step, each pipeline stage exchanges a dummy tensor with its neighbours to create the P2P
communicators (torch/distributed/pipelining/stage.py `_get_init_p2p_neighbors_ops`, torch 2.9:
`recv_tensor = torch.zeros(1, device=self.device)`, float32, and `send_tensor =
torch.tensor(self.stage_index, device=self.device)`, int64): one batch of a send and a receive to
each neighbour, whose dtypes differ. torch 2.13.0 creates both with `dtype=torch.float32` (the
fixed side).
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
    stage_index = init()  # one stage per rank
    is_first, is_last = stage_index == 0, stage_index == dist.get_world_size() - 1
    dtype = None if side == "buggy" else torch.float32
    recv_tensor = torch.zeros(1, dtype=torch.float32)
    send_tensor = torch.tensor(stage_index, dtype=dtype)
    ops = []
    if not is_first:  # forward
        ops.append(dist.P2POp(dist.irecv, recv_tensor, stage_index - 1))
    if not is_last:
        ops.append(dist.P2POp(dist.isend, send_tensor, stage_index + 1))
    if not is_first:  # backward
        ops.append(dist.P2POp(dist.isend, send_tensor, stage_index - 1))
    if not is_last:
        ops.append(dist.P2POp(dist.irecv, recv_tensor, stage_index + 1))
    for work in dist.batch_isend_irecv(ops):  # schedules._batch_p2p / _wait_batch_p2p
        work.wait()
    print(f"rank {stage_index}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
