"""MINIMAL DRIVER (not upstream code) for hpcaitech/ColossalAI #5940: OneForwardOneBackwardSchedule
caches the received activation's metadata (colossalai 0.4.9 one_f_one_b.py recv_forward: `if
self.enable_metadata_cache and self.tensor_metadata_recv is None: self.tensor_metadata_recv =
create_send_metadata(input_tensor)`) and, with the cache on (the default), the first stage stops
sending metadata after the first step (send_forward: `self.send_tensor_metadata = not
self.enable_metadata_cache`). A later batch with a longer sequence (the issue: 1x128 then 1x129) is
received into a buffer sized from the cached metadata (p2p.py `_communicate`: the metadata is a
size tensor and a pickled object, then the tensors, each exchange one `batch_isend_irecv`). The
issue's fix: `enable_metadata_cache=False` (the fixed side).
    torchrun --nproc_per_node 2 driver.py buggy|fixed
"""

import datetime
import os
import pickle
import sys

import torch
import torch.distributed as dist


def init() -> int:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("CASE_TIMEOUT", "30"))))
    return dist.get_rank()


def exchange(op: dist.P2POp) -> None:
    """One `batch_isend_irecv` of one op, as `_filling_ops_queue` and `dist.batch_isend_irecv` issue it."""
    for req in dist.batch_isend_irecv([op]):
        req.wait()


def main() -> None:
    side = sys.argv[1]
    rank = init()
    cache = side == "buggy"  # enable_metadata_cache
    cached_shape = None
    for seq in (128, 129):  # booster.execute_pipeline(batch) per batch
        if rank == 0:
            act = torch.ones(1, seq, 8)
            if not cache or seq == 128:  # send_metadata: the first step, or the cache off
                blob = torch.frombuffer(bytearray(pickle.dumps(tuple(act.shape))), dtype=torch.uint8)
                exchange(dist.P2POp(dist.isend, torch.tensor([blob.numel()]), 1))  # _send_recv_serialization_object
                exchange(dist.P2POp(dist.isend, blob, 1))
            exchange(dist.P2POp(dist.isend, act, 1))  # _batch_send_recv_tensor
        else:
            if cached_shape is None:  # metadata_recv is None
                size = torch.zeros(1, dtype=torch.int64)
                exchange(dist.P2POp(dist.irecv, size, 0))
                blob = torch.zeros(int(size), dtype=torch.uint8)
                exchange(dist.P2POp(dist.irecv, blob, 0))
                shape = pickle.loads(blob.numpy().tobytes())
                cached_shape = shape if cache else None  # self.tensor_metadata_recv
            else:
                shape = cached_shape
            exchange(dist.P2POp(dist.irecv, torch.empty(shape), 0))  # _create_recv_buffer(tensor_metadata)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
