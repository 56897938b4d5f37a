"""MINIMAL DRIVER (not upstream code) for sgl-project/sglang PR #24962 (issue #24687): in
event_loop_pp, PP rank 0 received an RPC request and handled it in process_input_requests(),
whose handle_rpc_request() calls barrier(), before _pp_send_pyobj_to_next_stage(); the other PP
ranks wait in recv_requests() for that send (point_to_point_pyobj). The fix sends to the next
stage before processing.
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
    size = torch.tensor([16])
    if rank == 0:
        if side == "buggy":
            dist.barrier()  # process_input_requests -> handle_rpc_request
            dist.send(size, 1)  # _pp_send_pyobj_to_next_stage
        else:
            dist.send(size, 1)
            dist.barrier()
    else:
        dist.recv(size, 0)  # recv_requests -> point_to_point_pyobj
        dist.barrier()
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
