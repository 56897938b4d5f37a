"""MINIMAL DRIVER (not upstream code) for NVIDIA/apex PR #1500 (NeMo validation with
drop_last=False): apex's pipeline schedules allocate every receive buffer from the fixed
`tensor_shape` [seq, micro_batch_size, hidden] (apex/transformer/pipeline_parallel/
p2p_communication.py `_communicate`), while the last, partial global batch gives a smaller
micro-batch: the first stage sends [seq, 2, hidden] into the next stage's [seq, 4, hidden]
buffer. The PR asks to adjust the shape's second element to the batch; NeMo's default,
drop_last=True, never forms the partial batch (the control side).
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


SEQ, MICRO_BATCH, HIDDEN = 16, 4, 8


def main() -> None:
    side = sys.argv[1]
    rank = init()
    micro_batches = [4, 4, 2] if side == "buggy" else [4, 4]  # 10 samples; drop_last=True drops the 2
    tensor_shape = (SEQ, MICRO_BATCH, HIDDEN)  # forward_backward_func(..., tensor_shape=tensor_shape)
    for size in micro_batches:
        if rank == 0:
            dist.send(torch.ones(SEQ, size, HIDDEN), 1)  # send_forward(output_tensor)
        else:
            dist.recv(torch.empty(tensor_shape), 0)  # recv_forward(tensor_shape)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
