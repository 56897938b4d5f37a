"""MINIMAL DRIVER (not upstream code) for deepspeedai/DeepSpeed #4726: at the end of a pipeline
step the last stage broadcasts its losses to the pipe group (PipelineEngine._aggregate_total_loss,
deepspeed 0.12.3: `losses = torch.stack([self.dp_group_loss, agg_loss])`, in the loss's dtype,
fp16 under 1-bit Adam / 0/1 Adam with fp16), while every other stage receives into
`torch.Tensor([0., 0.])`, float32: one broadcast, two dtypes, silently wrong losses. The fix
(deepspeed 0.16.0 reads `torch.stack(losses).float()`) casts the sender's tensor to float32.
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
    last = 1  # src_rank = self.grid.stage_to_global(self.num_stages - 1)
    if rank == last:
        dp_group_loss, agg_loss = torch.tensor(2.5, dtype=torch.float16), torch.tensor(2.5, dtype=torch.float16)
        losses = torch.stack([dp_group_loss, agg_loss])
        if side == "fixed":
            losses = losses.float()
        dist.broadcast(tensor=losses, src=last)  # the last stage's broadcast
    else:
        losses = torch.Tensor([0., 0.])
        dist.broadcast(tensor=losses, src=last)  # every other stage's receive
    print(f"rank {rank}: done {losses.tolist()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
