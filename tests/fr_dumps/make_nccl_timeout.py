"""NCCL Flight Recorder dumps on one GPU (the device tool lends one H200; two ranks on one GPU fail
with NCCL's "Duplicate GPU detected"). A hang stopped by the watchdog: a 100e9-cycle GPU sleep holds
the stream, the second batch_isend_irecv and the all_reduce behind it time out after 8 s, and torch
writes the dump itself (TORCH_NCCL_DUMP_ON_TIMEOUT).

    TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 \
    TORCH_NCCL_DEBUG_INFO_TEMP_FILE=OUT/nccl_trace_rank_ torchrun --nproc_per_node 1 make_nccl_timeout.py
"""
from datetime import timedelta
import torch,torch.distributed as dist
d=torch.device("cuda",0);torch.cuda.set_device(d)
dist.init_process_group("nccl",timeout=timedelta(seconds=8))
dist.all_reduce(torch.ones(4,device=d))
pp=dist.new_group([0],group_desc="pp",timeout=timedelta(seconds=8))
def b():
 for x in dist.batch_isend_irecv([dist.P2POp(dist.isend,torch.ones(32,device=d),0,group=pp),dist.P2POp(dist.irecv,torch.zeros(32,device=d),0,group=pp)]):x.wait()
b();torch.cuda.synchronize()
torch.cuda._sleep(int(1e11))
b()
dist.all_reduce(torch.ones(64,device=d),group=pp)
torch.cuda.synchronize()
