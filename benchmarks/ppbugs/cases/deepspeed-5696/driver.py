"""MINIMAL DRIVER (not upstream code) for deepspeedai/DeepSpeed #5696: the pipeline engine sends
the activation's shape only once (PipelineEngine._exec_send_activations: `if self.dynamic_shape or
self.first_output_send`) and allocates the receive buffer once (_exec_recv_activations: `if
self.dynamic_shape or self.pipe_recv_buf is None`, deepspeed 0.16.0); a second batch with a longer
sequence is then sent into the first batch's buffer. Fixed: dynamic_shape=True (meta and buffer
per batch), or padding every batch to one length (Coobiw/MPP-LLaVA #25).
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


SEQ = (24, 25)  # two batches' sequence lengths (the issue: 2262 then 2361)


def main() -> None:
    side = sys.argv[1]
    rank = init()
    for step, seq in enumerate(SEQ):
        if rank == 0:
            act = torch.ones(4, seq, 8)
            if side == "fixed" or step == 0:
                dist.send(torch.tensor(act.shape), 1)  # _send_tensor_meta
            dist.send(act, 1)  # p2p.send(outputs, self.next_stage)
        else:
            if side == "fixed" or step == 0:
                shape = torch.empty(3, dtype=torch.int64)
                dist.recv(shape, 0)  # _recv_tensor_meta
                buf = torch.empty(*shape.tolist())  # pipe_recv_buf
            dist.recv(buf, 0)  # p2p.recv(self.pipe_recv_buf, self.prev_stage)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
