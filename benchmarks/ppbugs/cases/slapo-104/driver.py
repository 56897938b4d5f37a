"""MINIMAL DRIVER (not upstream code) for awslabs/slapo PR #104: DeepSpeed's PipelineEngine sets
is_pipe_partitioned = is_model_parallel and pipeline['pipe_partitioned'] (default True with
tensor parallelism, deepspeed/runtime/pipe/engine.py, 0.16.0) and then sends each activation as
its 1/TP partition, while slapo's stages already pass partitioned activations and size their
receive buffers for the whole tensor: "incorrect send receive buffer sizes which causes hanging".
The fix: is_pipe_partitioned = is_grad_partitioned = False.
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


TP = 2


def main() -> None:
    side = sys.argv[1]
    rank = init()
    numel = 4096
    if rank == 0:
        act = torch.ones(numel)
        sent = act.view(TP, -1)[0].contiguous() if side == "buggy" else act  # partitioned send
        dist.send(sent, 1)
    else:
        dist.recv(torch.empty(numel), 0)  # the buffer sized for the whole activation
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
