"""Two gloo ranks of a pipeline where a rank dies of a Python exception mid-step (issue: a crash
read as a hang). Recorded by tests/dynamic/test_record_crash.py.

The construct reproduced is torchtitan 0.2.2's DualPipeV overlap step on a CPU build of torch
(pytorch/torchtitan, tag v0.2.2, torchtitan/distributed/dual_pipe_v.py:263,
`main_stream = torch.accelerator.current_stream(device_type)`): the schedule has posted its
receives for the step (torch/distributed/pipelining/schedules.py's `_batch_p2p` of the RECV
actions), then the overlap callback raises `RuntimeError: Accelerator expected` before waiting
on them, so the process dies with ops in flight.

CRASH=one: rank 0 raises in step 1 while rank 1 is blocked in the recv of that step (its
partner is gone: a consequence). CRASH=both: both ranks post their step-1 exchange and raise
before waiting on it, as both DualPipeV ranks do. CRASH=hang: rank 0 sleeps in step 1 instead,
rank 1 waits in its recv until a signal ends it (a hang, not a crash).
"""

import os
import time

import torch
import torch.distributed as dist


dist.init_process_group("gloo")
rank = dist.get_rank()
peer = 1 - rank
mode = os.environ.get("CRASH", "one")
x = torch.ones(4)
for step in range(2):
    if mode == "both" and step == 1:
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, x, peer),
                                        dist.P2POp(dist.irecv, torch.empty(4), peer)])
        torch.accelerator.current_stream("cpu")  # CRASH-BOTH
    if rank == 0:
        if mode == "one" and step == 1:
            torch.accelerator.current_stream("cpu")  # CRASH-ONE
        if mode == "hang" and step == 1:
            time.sleep(300)
        dist.send(x, 1)
    else:
        dist.recv(x, 0)
dist.barrier()
dist.destroy_process_group()
