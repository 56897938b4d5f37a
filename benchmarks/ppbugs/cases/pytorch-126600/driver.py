"""MINIMAL DRIVER (not upstream code) for pytorch/pytorch #126600 (found in torchtitan PR #345): with
PP degree 3 and batch size 8, torch.distributed.pipelining chunks the batch into micro-batches of
3, 3 and 2 rows, and stage 0 sends them so (_PipelineStage.py "Sending tensor to Stage 1:
torch.Size([3, 2048, 256])" ... [2, ...]), while the next stages keep receiving into buffers of the
first micro-batch's shape (their outputs are 3, 3, 3 rows): the issue suspects "the larger initial
size buffer for all following iterations". The control side splits evenly (batch 9: 3, 3, 3),
as torchtitan then required.
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
    batch = torch.ones(8 if side == "buggy" else 9, 16)
    chunks = torch.tensor_split(batch, 3)  # split_args_kwargs_into_chunks(n_microbatches=3)
    recv_buf = torch.empty(chunks[0].shape)  # the stage's receive buffer, from the first micro-batch
    for chunk in chunks:
        if rank == 0:
            ops = [dist.P2POp(dist.isend, chunk.contiguous(), 1)]  # stage.get_fwd_send_ops()
        else:
            ops = [dist.P2POp(dist.irecv, recv_buf, 0)]  # stage.get_fwd_recv_ops()
        for work in dist.batch_isend_irecv(ops):  # schedules._batch_p2p
            work.wait()
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
