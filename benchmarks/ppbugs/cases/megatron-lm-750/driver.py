"""MINIMAL DRIVER (not upstream code) for NVIDIA/Megatron-LM #750: with PP=2 and the interleaved
schedule, send_forward_backward_recv_forward_backward puts send_prev (a gradient), recv_prev (an
activation), send_next (an activation) and recv_next (a gradient) to the one peer in one untagged
batch (megatron/core/pipeline_parallel/p2p_communication.py _batched_p2p_ops, megatron-core 0.17.0):
"tensor_send_next and tensor_send_prev ... are indistinguishable with PP=2". The fix
(commit 152c562, overlap_p2p_comm) splits forward and backward communication into two batches.
    torchrun --nproc_per_node 2 driver.py one-batch|split
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
    prev_rank = next_rank = 1 - rank
    grad_out, act_out = torch.full((64,), -1.0), torch.full((64,), 1.0)
    act_in, grad_in = torch.empty(64), torch.empty(64)
    send_prev = dist.P2POp(dist.isend, grad_out, prev_rank)
    recv_prev = dist.P2POp(dist.irecv, act_in, prev_rank)
    send_next = dist.P2POp(dist.isend, act_out, next_rank)
    recv_next = dist.P2POp(dist.irecv, grad_in, next_rank)
    if side == "one-batch":
        batches = [[send_prev, recv_prev, send_next, recv_next]]
    else:
        batches = [[send_next, recv_prev], [send_prev, recv_next]] if rank == 0 else [[recv_prev, send_next], [recv_next, send_prev]]
    for ops in batches:
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    print(f"rank {rank}: activation in {act_in[0].item()}, gradient in {grad_in[0].item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
