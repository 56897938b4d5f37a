"""A toy 4-stage pipeline on gloo, run under `p2paudit record` by tests/dynamic/test_record_runs.py.

Per step, like megatron's 1F1B with variable sequence lengths: shapes go forward in one
batch_isend_irecv on the PP group (gloo issues them one by one), activations forward with
blocking send/recv, gradients backward with isend/irecv, and the loss is all-reduced on the world
group. At the end ranks 2 and 3 exchange once on a 2-rank group addressed by group ranks, and
everyone meets at a barrier. Each P2P line is tagged `# SITE: name` so tests find its number.

Environment: TOY_SLEEP=S makes rank 0 sleep S seconds before its first activation send (ranks
1-3 then hang in recv); TOY_KILL=R makes rank R SIGKILL itself right after its first recv.
"""

import os
import signal
import time

import torch
import torch.distributed as dist

STEPS = 2


def exchange_shapes(shape_out, shape_in, pp, prev, nxt):
    ops = []
    if shape_out is not None:
        ops.append(dist.P2POp(dist.isend, shape_out, nxt, pp))  # SITE: p2pop-isend
    if shape_in is not None:
        ops.append(dist.P2POp(dist.irecv, shape_in, prev, pp))  # SITE: p2pop-irecv
    for work in dist.batch_isend_irecv(ops):  # SITE: batch
        work.wait()


def forward(x, pp, rank, prev, nxt):
    if prev is not None:
        dist.recv(x, prev, group=pp)  # SITE: recv-activation
        if int(os.environ.get("TOY_KILL", "-1")) == rank:
            os.kill(os.getpid(), signal.SIGKILL)
    elif os.environ.get("TOY_SLEEP"):
        time.sleep(float(os.environ["TOY_SLEEP"]))
    y = x * 2 + 1
    if nxt is not None:
        dist.send(y, nxt, group=pp)  # SITE: send-activation
    return y


def backward(grad, pp, prev, nxt):
    if nxt is not None:
        dist.irecv(grad, src=nxt, group=pp).wait()  # SITE: irecv-grad
    work = None
    if prev is not None:
        work = dist.isend(grad, dst=prev, group=pp)  # SITE: isend-grad
    return work


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    pp = dist.new_group(list(range(world)), group_desc="pp")
    tail = dist.new_group([2, 3], group_desc="tail")
    prev = rank - 1 if rank > 0 else None
    nxt = rank + 1 if rank < world - 1 else None
    for step in range(STEPS):
        x = torch.full((4, 2), float(step + 1))
        shape_out = torch.tensor(x.shape) if nxt is not None else None
        shape_in = torch.empty(2, dtype=torch.int64) if prev is not None else None
        exchange_shapes(shape_out, shape_in, pp, prev, nxt)
        y = forward(x, pp, rank, prev, nxt)
        pending = backward(torch.ones(4, 2), pp, prev, nxt)
        loss = y.sum().reshape(1)
        dist.all_reduce(loss)  # SITE: all-reduce
        if pending is not None:
            pending.wait()
    if rank == 2:
        dist.isend(torch.arange(3.0), group=tail, group_dst=1).wait()  # SITE: tail-isend
    elif rank == 3:
        dist.irecv(torch.empty(3), group=tail, group_src=0).wait()  # SITE: tail-irecv
    dist.barrier()  # SITE: barrier
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
