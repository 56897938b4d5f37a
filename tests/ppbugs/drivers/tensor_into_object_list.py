"""A tensor `send` received by `recv_object_list`, on 2 gloo ranks: the pair torch.distributed.pipelining
makes when two stages disagree on which op comes next (torchtitan #774,
https://github.com/pytorch/torchtitan/issues/774; benchmarks/ppbugs/cases/torchtitan-774). In torch
2.13.0 torch/distributed/pipelining/stage.py, `_warmup_backward_result` sends a `[1]` int32 flag
while the peer stage's `_recv_meta` (shape inference) calls `dist.recv_object_list`, whose first
receive is a `[len(object_list)]` int64 size tensor (torch/distributed/distributed_c10d.py
recv_object_list). Rank 1 reads the int32's bytes as a size and either fails to allocate or waits
for object bytes that never come. Recorded by tests/analysis/waitfor/test_object_list_wire.py."""

import datetime
import os

import torch
import torch.distributed as dist


def main() -> None:
    timeout = datetime.timedelta(seconds=int(os.environ.get("GLOO_TIMEOUT", "20")))
    dist.init_process_group("gloo", timeout=timeout)
    if dist.get_rank() == 0:
        dist.send(torch.ones(1, dtype=torch.int32), dst=1)
    else:
        dist.recv_object_list([None], src=0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
