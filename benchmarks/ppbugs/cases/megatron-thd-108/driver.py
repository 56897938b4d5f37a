"""MINIMAL DRIVER (not upstream code) for ISEEKYAN/Megatron-LM PR #108 (the megatron fork verl's
mbridge users run): under THD packing every micro-batch packs another number of tokens, but the
1F1B schedule sized the receive buffer from a locally derived shape and "silently fell back to a
fixed shape when it could not"; the PR exchanges the shape first (_communicate_shapes, as
megatron.core.pipeline_parallel.p2p_communication does) and sizes the buffer from it.
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


FIXED_TOKENS = 16  # the fallback shape
PACKED = (13, 16, 11)  # tokens packed per micro-batch


def main() -> None:
    side = sys.argv[1]
    rank = init()
    for tokens in PACKED:
        if rank == 0:
            hidden = torch.ones(tokens, 1, 8)
            if side == "fixed":
                dist.send(torch.tensor(hidden.shape), 1)  # _communicate_shapes
            dist.send(hidden, 1)
        else:
            shape = [FIXED_TOKENS, 1, 8]
            if side == "fixed":
                got = torch.empty(3, dtype=torch.int64)
                dist.recv(got, 0)
                shape = got.tolist()
            dist.recv(torch.empty(*shape), 0)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
