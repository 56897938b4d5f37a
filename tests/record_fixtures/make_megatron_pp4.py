"""megatron-core 0.17.0's real 1F1B schedule on 4 gloo CPU ranks (PP=4), for `p2paudit record`.

Re-record the committed fixture `megatron_pp4/` (run from the repository root; about 20 s):

    python tests/record_fixtures/make_megatron_pp4.py

which runs itself under `python -m auditor record -- torchrun --nproc_per_node 4 ...` and copies
the trace here. The run is the GLM-5.1 case's op order without a GPU or a model:
`get_forward_backward_func()` of the unpacked 0.17.0 wheel (from the p2paudit cache) on a
stand-in stage (a config, `set_input_tensor`, an output of the activation shape: 4096 x 1 x 1536
fp32 = 24 MiB), variable_seq_lengths=True and batch_p2p_comm=True as mcore-bridge sets them, and
ms-swift 4.3.0's `_patch__batched_p2p_ops` (group=None) run from the wheel's own source. The
schedule's CUDA-only calls are redirected to the CPU: `torch.cuda.current_device`,
`torch.cuda.synchronize`, and a TorchFunctionMode that maps a CUDA `device=` to cpu.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "megatron_pp4"
PP = 4
MICROBATCHES = 4
SEQ, MICRO_BATCH, HIDDEN = 4096, 1, 1536  # 24 MiB of fp32 per activation


def _wheel_root(spec: str) -> Path:
    from auditor import sources

    return sources.resolve(spec).root


def _cpu_only_torch():
    """Make megatron's CUDA calls run on the CPU: the schedule only needs tensors and groups."""
    import torch
    from torch.overrides import TorchFunctionMode

    def on_cpu(device):
        if isinstance(device, int) or (isinstance(device, str) and device.startswith("cuda")):
            return "cpu"
        if isinstance(device, torch.device) and device.type == "cuda":
            return "cpu"
        return device

    class CudaToCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = on_cpu(kwargs["device"])
            return func(*args, **kwargs)

    torch.cuda.current_device = lambda: 0
    torch.cuda.synchronize = lambda *a, **k: None
    return CudaToCpu()


def _apply_swift_patch(swift_root: Path) -> None:
    """Run ms-swift's own `_patch__batched_p2p_ops` from the wheel (swift is not imported)."""
    path = swift_root / "swift" / "megatron" / "init.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    (patch,) = [n for n in tree.body
                if isinstance(n, ast.FunctionDef) and n.name == "_patch__batched_p2p_ops"]
    namespace = {"__name__": "swift.megatron.init"}
    exec(compile(ast.Module(body=[patch], type_ignores=[]), str(path), "exec"), namespace)
    namespace["_patch__batched_p2p_ops"]()


def rank_main(megatron_root: str, swift_root: str) -> None:
    sys.path.insert(0, megatron_root)
    mode = _cpu_only_torch()
    import torch
    import torch.distributed as dist
    from megatron.core import parallel_state
    from megatron.core.pipeline_parallel import get_forward_backward_func
    from megatron.core.transformer.transformer_config import TransformerConfig

    dist.init_process_group("gloo")
    parallel_state.initialize_model_parallel(pipeline_model_parallel_size=PP)
    _apply_swift_patch(Path(swift_root))
    config = TransformerConfig(
        num_layers=PP, hidden_size=HIDDEN, num_attention_heads=8,
        pipeline_model_parallel_size=PP, pipeline_dtype=torch.float32,
        variable_seq_lengths=True, batch_p2p_comm=True, overlap_p2p_comm=False,
        moe_token_dispatcher_type="alltoall")  # the default refuses variable lengths

    class Stage(torch.nn.Module):
        """A pipeline stage with nothing inside: the activation's shape is all P2P sees."""

        def __init__(self) -> None:
            super().__init__()
            self.config = config
            self.scale = torch.nn.Parameter(torch.ones(()))
            self.input_tensor = None

        def set_input_tensor(self, tensor) -> None:
            self.input_tensor = tensor[0] if isinstance(tensor, list) else tensor

        def forward(self):
            x = self.input_tensor
            if x is None:
                x = torch.ones(SEQ, MICRO_BATCH, HIDDEN)
            return x * self.scale

    def forward_step(data_iterator, model):
        next(data_iterator)
        output = model()

        def loss_func(out):
            loss = out.float().mean()
            return loss, {"loss": loss.detach()}

        return output, loss_func

    with mode:
        get_forward_backward_func()(
            forward_step_func=forward_step, data_iterator=iter(range(MICROBATCHES)),
            model=[Stage()], num_microbatches=MICROBATCHES, seq_length=SEQ,
            micro_batch_size=MICRO_BATCH, decoder_seq_length=SEQ, forward_only=False)
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    megatron = _wheel_root("megatron-core==0.17.0")
    swift = _wheel_root("ms-swift==4.3.0")
    work = Path(tempfile.mkdtemp())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(HERE.parents[1]), os.environ.get("PYTHONPATH")) if p))
    subprocess.run(
        [sys.executable, "-m", "auditor", "record", "--out", str(work / "trace"), "--",
         sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
         str(PP), __file__, "--rank", str(megatron), str(swift)], env=env, check=True)
    shutil.rmtree(FIXTURE, ignore_errors=True)
    shutil.copytree(work / "trace", FIXTURE)
    shutil.rmtree(work)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        rank_main(*sys.argv[2:4])
    else:
        main()
