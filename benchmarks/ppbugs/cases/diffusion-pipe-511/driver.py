"""diffusion-pipe #511: DeepSpeed's PipelineEngine on 3 gloo ranks, an int64 tensor between the stages.

The smallest model with the shape of diffusion-pipe's flux2 tuple: every stage passes on
(lengths int64 [2], hidden float32 [64]), with PipelineModule(dynamic_shape=True) as diffusion-pipe
builds it (train.py). On the middle stage the grad receive re-allocates pooled slot 0 as float and
the next activation receive reuses it for the int64 tensor. Run under torchrun:
    torchrun --nproc_per_node 3 driver.py {buggy,fixed}
`fixed` applies diffusion-pipe's own patch (PR #544, commit 528aa45): reallocate when the dtype
differs. Needs deepspeed==0.18.4 importable (p2paudit's `ppbugs` extra; its sdist builds no ops by
default, so it installs on a CPU machine with torch 2.13); DS_ACCELERATOR=cpu selects gloo.

Each rank ends itself with SIGTERM after LIMIT_S seconds, so a receive that never completes cannot
hold a CI machine: p2paudit's recorder writes the rank's hang file on that signal, and long before
it on its own `--hang-after`.
"""

import os
import signal
import sys
import threading
from functools import reduce
from operator import mul

# A whole run takes about 30 s on 2 cores, most of it importing DeepSpeed; the PP-BugBench runner
# allows a side 120 s. The limit counts from here, before DeepSpeed is imported.
LIMIT_S = 90
_watchdog = threading.Timer(LIMIT_S, os.kill, (os.getpid(), signal.SIGTERM))
_watchdog.daemon = True
_watchdog.start()

os.environ.setdefault("DS_ACCELERATOR", "cpu")

import torch
from torch import nn

import deepspeed
from deepspeed.pipe import LayerSpec, PipelineModule
from deepspeed.runtime.pipe.engine import PipelineEngine

DEEPSPEED = "0.18.4"
HIDDEN = 64
MICROBATCHES = 4


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(HIDDEN))

    def forward(self, x: torch.Tensor):
        return torch.tensor([3, 5], dtype=torch.int64), x * self.w


class Middle(Head):
    def forward(self, inputs):
        lengths, hidden = inputs
        return lengths, hidden * self.w


class Tail(Head):
    def forward(self, inputs):
        _, hidden = inputs
        return hidden * self.w


def allocate_or_extend_buffers_checking_dtype(self, idx, shape, dtype):
    """diffusion-pipe's utils/patches.py after PR #544 (commit 528aa45), quoted without its comment.

    It is DeepSpeed 0.18.4's own method (Apache-2.0) with one clause added by the PR,
    `or self._grad_layer_buf[idx].dtype != dtype`; diffusion-pipe is GPL-3.0, and this clause is
    quoted to reproduce its fix (tests/ppbugs/test_ppbugs_diffusion_pipe.py checks that nothing else differs).
    """
    numel = reduce(mul, shape) if len(shape) > 0 else 1
    if (len(self._grad_layer_buf) <= idx or self._grad_layer_buf[idx].numel() < numel
            or self._grad_layer_buf[idx].dtype != dtype):
        new_buf = self._allocate_buffer(shape, dtype=dtype, num_buffers=1)[0]
        if len(self._grad_layer_buf) <= idx:
            self._grad_layer_buf.append(new_buf)
        else:
            self._grad_layer_buf[idx] = new_buf
        return self._grad_layer_buf[idx]
    else:
        return self._grad_layer_buf[idx].flatten()[:numel].view(shape)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "buggy"
    if mode not in ("buggy", "fixed"):
        raise SystemExit(f"driver.py: MODE must be buggy or fixed, not {mode!r}")
    if deepspeed.__version__.strip() != DEEPSPEED:
        raise SystemExit(f"driver.py: needs deepspeed=={DEEPSPEED}, found {deepspeed.__version__}")
    if mode == "fixed":
        PipelineEngine._allocate_or_extend_buffers = allocate_or_extend_buffers_checking_dtype
    # DeepSpeed's CPU backend JIT-compiles a shared-memory all-reduce at init; the pipeline's P2P
    # does not use it, and compiling it takes minutes on a small machine.
    sys.modules["deepspeed.comm.torch"].build_shm_op = lambda: None
    deepspeed.init_distributed(dist_backend="gloo")
    net = PipelineModule(layers=[LayerSpec(Head), LayerSpec(Middle), LayerSpec(Tail)], num_stages=3,
                         loss_fn=lambda out, target: (out - target).pow(2).mean(), partition_method="uniform",
                         dynamic_shape=True)
    params = [p for p in net.parameters() if p.requires_grad]
    # ZeRO-1 as diffusion-pipe runs: DeepSpeed 0.18 refuses tensor.backward() on middle stages at ZeRO-0.
    config = {"train_batch_size": MICROBATCHES, "train_micro_batch_size_per_gpu": 1, "steps_per_print": 1000,
              "zero_optimization": {"stage": 1}, "zero_allow_untested_optimizer": True}
    engine, _, _, _ = deepspeed.initialize(model=net, model_parameters=params,
                                           optimizer=torch.optim.SGD(params, lr=0.01), config=config)
    loss = engine.train_batch(data_iter=iter([(torch.ones(HIDDEN), torch.zeros(HIDDEN))] * MICROBATCHES))
    print(f"rank {torch.distributed.get_rank()} ({mode}): done, loss {float(loss):.3f}", flush=True)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
