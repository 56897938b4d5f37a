"""NCCL Flight Recorder dumps on one GPU (the device tool lends one H200; two ranks on one GPU fail
with NCCL's "Duplicate GPU detected"). Writes OUT/rankN.json and OUT/nccl_trace_rank_N through
torch's calls: an all_reduce, a batch_isend_irecv to itself (a coalesced P2P batch), an all_reduce on
a group named pp.

    TORCH_FR_BUFFER_SIZE=2000 torchrun --nproc_per_node 1 make_nccl_dumps.py OUT
"""
import os,sys,time
from datetime import timedelta
import torch,torch.distributed as dist
out=sys.argv[1];hang="hang" in sys.argv
r=int(os.environ["RANK"]);w=int(os.environ["WORLD_SIZE"])
d=torch.device("cuda",0);torch.cuda.set_device(d)
dist.init_process_group("nccl",timeout=timedelta(seconds=60))
p=(r+1)%w if r%2==0 else r-1
dist.all_reduce(torch.ones(4,device=d))
pp=dist.new_group(list(range(w)),group_desc="pp")
if w>1:
 if r%2==0:
  dist.send(torch.ones(8,device=d),p,group=pp);dist.isend(torch.ones(16,device=d),p,group=pp).wait()
 else:
  dist.recv(torch.zeros(8,device=d),p,group=pp);dist.irecv(torch.zeros(16,device=d),p,group=pp).wait()
 for x in dist.batch_isend_irecv([dist.P2POp(dist.isend,torch.ones(32,device=d),p,group=pp),dist.P2POp(dist.irecv,torch.zeros(32,device=d),p,group=pp)]):x.wait()
else:
 for x in dist.batch_isend_irecv([dist.P2POp(dist.isend,torch.ones(32,device=d),0,group=pp),dist.P2POp(dist.irecv,torch.zeros(32,device=d),0,group=pp)]):x.wait()
dist.all_reduce(torch.ones(64,device=d),group=pp)
if hang and r==0:dist.all_reduce(torch.ones(64,device=d),group=pp)
torch.cuda.synchronize() if not hang else None
time.sleep(2)
c=torch._C._distributed_c10d
open(f"{out}/rank{r}.json","wb").write(c._dump_nccl_trace_json(includeCollectives=True))
open(f"{out}/nccl_trace_rank_{r}","wb").write(c._dump_nccl_trace(includeCollectives=True))
os._exit(0)
