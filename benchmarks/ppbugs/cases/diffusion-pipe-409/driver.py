"""MINIMAL DRIVER (not upstream code) for tdrussell/diffusion-pipe #409: to give the last stage its
target, stage 0 sends it with dist.send as soon as it loads the batch, while the last stage first
receives the activation through DeepSpeed's PipelineEngine (deepspeed/runtime/pipe/engine.py
_exec_recv_activations -> p2p.recv, deepspeed 0.16.0) and only then receives the target. Both
travel untagged on one pair, so the first send pairs with the first receive.
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
    target, act = torch.arange(4), torch.ones(4, 16, 8)
    if rank == 0:
        dist.send(target, 1)  # the issue: the target right after loading the batch
        dist.send(act, 1)  # PipelineEngine: SendActivation
    else:
        got_target, got_act = torch.empty(4, dtype=torch.int64), torch.empty(4, 16, 8)
        if side == "buggy":
            dist.recv(got_act, 0)  # PipelineEngine: RecvActivation first
            dist.recv(got_target, 0)
        else:
            dist.recv(got_target, 0)  # received in the order it was sent
            dist.recv(got_act, 0)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
