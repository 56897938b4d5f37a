"""MINIMAL DRIVER (not upstream code) for deepspeedai/DeepSpeed PR #5518 (Megatron-DeepSpeed, TP>1
so is_grad_partitioned): the stage that sends gradients sends only the partitioned gradient of the
first tensor, two sends (PipelineEngine._exec_send_grads: `p2p.send(inputs[0], self.prev_stage)`,
`p2p.send(inputs[1], self.prev_stage)`), while the stage that receives them posts one receive more
per floating-point tensor after those two (_exec_recv_grads: `for t in outputs[2:] if
t.is_floating_point()`, deepspeed 0.16.0). A float tensor that needs no gradient (the PR's cached
rotary embedding) is one receive nobody sends: the receiving stage waits forever. The PR's fix:
receive only the two partitioned-gradient tensors. After the gradients, each stage goes on with
the next micro-batch of 1F1B: the first stage sends its activation, the later stage receives it.
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
    if rank == 1:  # the later stage: _exec_send_grads, is_grad_partitioned
        dist.send(torch.tensor([2, 4, 8, 16], dtype=torch.int64), 0)  # part.to_meta()
        dist.send(torch.ones(64), 0)  # part.data(): this TP rank's share of the gradient
        dist.recv(torch.empty(2, 16), 0)  # RecvActivation of the next micro-batch
    else:  # the earlier stage: _exec_recv_grads; its outputs: (meta, part, attention_mask, rotary)
        outputs = (torch.zeros(4, dtype=torch.int64), torch.zeros(64), torch.zeros(8, dtype=torch.int32), torch.zeros(16))
        tail = [t for t in outputs[2:] if t.is_floating_point()] if side == "buggy" else []
        for buf in [*outputs[:2], *tail]:
            dist.recv(buf, 1)  # p2p.recv(buffer, self.next_stage)
        dist.send(torch.ones(2, 16), 1)  # SendActivation of the next micro-batch
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
