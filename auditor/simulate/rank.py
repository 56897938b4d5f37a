"""The simulated pipeline ranks: megatron-core's own schedule on gloo, with a stand-in stage.

Run as `python -m auditor.simulate.rank SPEC.json` by `auditor.simulate.run`. The process imports
megatron-core once, unrecorded, and forks one child per rank; each child arms the recorder itself
(`auditor.dynamic.session`, as a recorded process does at start-up), so every op the schedule
issues lands in the trace like a real run's, and a 4-rank run pays for one import, not four.
The schedule, its P2P layer and the framework's patches of that layer run unchanged; only what
needs a GPU is redirected: `torch.cuda.current_device`/`synchronize`, and tensors megatron
allocates on "cuda" (schedules.py allocates its token counter there) are made on the CPU. The
stage is a stand-in: it has megatron's `config`, takes its input through `set_input_tensor` and
returns a tensor of the real activation shape, so the messages have the real sizes.
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.overrides import TorchFunctionMode

from auditor.simulate import standins
from auditor.simulate.forked import run_forked
from auditor.simulate.schedule_flags import SCHEDULE_FLAGS

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


class CudaOnCpu(TorchFunctionMode):
    """Tensors asked for on a CUDA device are made on the CPU."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        device = kwargs.get("device")
        if device is not None and torch.device(device).type == "cuda":
            kwargs["device"] = "cpu"
        return func(*args, **kwargs)


def _cuda_to_cpu() -> None:
    # torch's stubs say an int; on CPU the device megatron asks for is "cpu".
    torch.cuda.current_device = lambda: "cpu"  # type: ignore[assignment,return-value]
    torch.cuda.synchronize = lambda device=None: None


class StageModule(torch.nn.Module):
    """A pipeline stage of the real activation shape: output = input * weight (first stage: the
    weight broadcast), so the backward pass sends a gradient of the same shape back."""

    def __init__(self, config: Any, model_type: Any, shape: tuple[int, ...],
                 dtype: torch.dtype) -> None:
        super().__init__()
        self.config = config
        self.model_type = model_type  # the interleaved schedule reads it
        self.shape = shape
        self.weight = torch.nn.Parameter(torch.ones((), dtype=dtype))
        self.input_tensor: torch.Tensor | None = None

    def set_input_tensor(self, tensors: list[torch.Tensor | None]) -> None:
        self.input_tensor = tensors[0]

    def forward(self) -> torch.Tensor:
        if self.input_tensor is None:
            return self.weight.expand(self.shape) * 1
        return self.input_tensor * self.weight


def _forward_step(data_iterator: Any, model: StageModule) -> tuple[torch.Tensor, Any]:
    next(data_iterator)
    output = model()

    def loss_func(output_tensor: torch.Tensor) -> tuple[torch.Tensor, dict]:
        loss = output_tensor.float().mean()
        return loss, {"loss": loss.detach()}

    return output, loss_func


def apply_patch(path: str, module: str, function: str, target: str) -> str:
    """Run a framework's patch installer (a module-level function without arguments) from its
    source file, without importing the rest of its package: ms-swift's `_patch__batched_p2p_ops`
    needs megatron-core only, its package needs far more. Checks that `target` (module.attr)
    is now code from that file."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    found: list[ast.stmt] = [node for node in tree.body
             if isinstance(node, ast.FunctionDef) and node.name == function]
    if len(found) != 1:
        raise SystemExit(f"p2paudit simulate: {path} defines {function} {len(found)} times")
    namespace: dict[str, Any] = {"__name__": module, "__file__": path}
    exec(compile(ast.Module(body=found, type_ignores=[]), path, "exec"), namespace)
    namespace[function]()
    owner, _, attr = target.rpartition(".")
    patched = getattr(importlib.import_module(owner), attr)
    if getattr(getattr(patched, "__code__", None), "co_filename", None) != path:
        raise SystemExit(f"p2paudit simulate: {module}.{function} did not replace {target}")
    return f"{path}:{found[0].lineno}"


def run_rank(spec: dict[str, Any], rank: int) -> None:
    from megatron.core import parallel_state
    from megatron.core.enums import ModelType
    from megatron.core.transformer.transformer_config import TransformerConfig
    from megatron.core.pipeline_parallel import get_forward_backward_func

    pp, vpp = spec["pipeline_size"], spec["virtual_stages"]
    dist.init_process_group("gloo", init_method=spec["store"], rank=rank, world_size=pp)
    parallel_state.initialize_model_parallel(
        pipeline_model_parallel_size=pp, virtual_pipeline_model_parallel_size=vpp)
    # The trainer's setup has used the default group before its first step (ms-swift's dataset
    # loading barriers on it: swift/utils/torch_utils.py safe_ddp_context; Megatron-LM's pretrain
    # all-reduces its start time on it: megatron/training/training.py), so its communicator
    # exists when the schedule starts, also under lazy init.
    dist.barrier()
    patched = [apply_patch(x["path"], x["module"], x["function"], x["target"])
               for x in spec["patches"]]
    dtype = DTYPES[spec["dtype"]]
    shape = tuple(spec["shape"])
    # The schedules read TransformerConfig fields (hidden_size, ...): one layer per stage; its
    # default MoE dispatcher refuses variable lengths, though the stand-in has no MoE.
    config = TransformerConfig(
        num_layers=pp * (vpp or 1), hidden_size=shape[2], num_attention_heads=1,
        moe_token_dispatcher_type="alltoall",
        pipeline_model_parallel_size=pp, virtual_pipeline_model_parallel_size=vpp,
        pipeline_dtype=dtype, **{k: spec[k] for k in SCHEDULE_FLAGS})
    chunks = [StageModule(config, ModelType.encoder_or_decoder, shape, dtype) for _ in range(vpp or 1)]
    schedule = get_forward_backward_func()
    microbatches = spec["microbatches"]
    with CudaOnCpu():
        schedule(forward_step_func=_forward_step,
                 data_iterator=[iter(range(microbatches)) for _ in chunks] if vpp else
                 iter(range(microbatches)),
                 model=chunks if vpp else chunks[0], num_microbatches=microbatches,
                 seq_length=shape[0], micro_batch_size=shape[1], forward_only=False)
    result = {"rank": rank, "schedule": schedule.__name__, "patched": patched,
              "stood_in": spec.get("stood_in", [])}
    Path(spec["out"], f"result-{rank}.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()


def main(spec_path: str) -> int:
    """The ranks of `spec_path`'s simulation, forked (simulate.forked.run_forked)."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    sys.path[:0] = spec["paths"]
    _cuda_to_cpu()
    stood_in = standins.install(spec.get("stand_ins", []))
    import megatron.core.pipeline_parallel  # noqa: F401  (once, before the fork)
    standins.arm()
    spec["stood_in"] = stood_in
    return run_forked(spec, run_rank)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
