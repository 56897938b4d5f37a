"""MINIMAL DRIVER (not upstream code) for deepspeedai/DeepSpeed #4777: PipelineEngine sends the
activation's shape only on the first micro-batch (`_exec_send_activations`: `if
self.first_output_send`) and sizes the receive buffer only once (`_exec_recv_activations`: `if
self.pipe_recv_buf is None`, deepspeed 0.14.5). `reset_activation_shape()` re-arms both, but only
between batches: micro-batches of one batch with different lengths are received into the first
micro-batch's buffer. deepspeed 0.15.0's `dynamic_shape` sends the shape and sizes the buffer per
micro-batch (the fixed side).
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


BATCHES = ((24, 24), (30, 26))  # each batch's micro-batch sequence lengths (gradient accumulation 2)


def main() -> None:
    side = sys.argv[1]
    rank = init()
    for lengths in BATCHES:
        first = True  # engine.reset_activation_shape() between batches
        for seq in lengths:
            meta = side == "fixed" or first  # dynamic_shape or first_output_send / pipe_recv_buf is None
            if rank == 0:
                act = torch.ones(2, seq, 8)
                if meta:
                    dist.send(torch.tensor(act.shape), 1)  # _send_tensor_meta
                dist.send(act, 1)  # p2p.send(outputs, self.next_stage)
            else:
                if meta:
                    shape = torch.empty(3, dtype=torch.int64)
                    dist.recv(shape, 0)  # _recv_tensor_meta
                    buf = torch.empty(*shape.tolist())  # self.pipe_recv_buf
                dist.recv(buf, 0)  # p2p.recv(self.pipe_recv_buf, self.prev_stage)
            first = False
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
