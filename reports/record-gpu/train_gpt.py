"""A tiny megatron-core 0.17 GPT trained a few steps with PP=2, for `p2paudit record` on 2 GPUs.

Local layer spec (no TransformerEngine, no apex), variable_seq_lengths=True, 1F1B through
`get_forward_backward_func()` (forward_backward_pipelining_without_interleaving). Variants:
  stock      batch_p2p_comm=True
  swift      the same, with ms-swift 4.3.0's `_patch__batched_p2p_ops` (group=None) applied by
             running that very function, read from the installed ms-swift's
             swift/megatron/init.py (ms-swift itself is not imported: it needs far more packages)
  unbatched  batch_p2p_comm=False
Micro-batches have different sequence lengths, so the shapes really are exchanged. Each rank
writes its step times (CUDA-synchronised, after --warmup steps) and losses to --metrics/rank-N.json.

--cpu-check runs, on gloo, what megatron lets run without a GPU: its process groups, the model,
the variant's config and patch, the schedule's selection and the micro-batches.

    torchrun --nproc_per_node 2 reports/record-gpu/train_gpt.py --variant stock --steps 30 \
        --metrics OUT/metrics/stock
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist
from megatron.core import parallel_state
from megatron.core.models.gpt import GPTModel
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.pipeline_parallel import get_forward_backward_func
from megatron.core.pipeline_parallel import p2p_communication
from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
from megatron.core.transformer.transformer_config import TransformerConfig

VARIANTS = ("stock", "swift", "unbatched")


def apply_swift_patch() -> str:
    """Run ms-swift's own `_patch__batched_p2p_ops` (the function `init_megatron_env` calls)."""
    spec = importlib.util.find_spec("swift")  # locates the package without executing it
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("ms-swift is not installed: carry its wheel (.whl/ms_swift-4.3.0-*.whl)")
    path = Path(spec.submodule_search_locations[0]) / "megatron" / "init.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    (patch,) = [node for node in tree.body
                if isinstance(node, ast.FunctionDef) and node.name == "_patch__batched_p2p_ops"]
    namespace = {"__name__": "swift.megatron.init"}
    exec(compile(ast.Module(body=[patch], type_ignores=[]), str(path), "exec"), namespace)
    namespace["_patch__batched_p2p_ops"]()
    patched = p2p_communication._batched_p2p_ops.__code__.co_filename
    assert patched == str(path), f"megatron's _batched_p2p_ops is still {patched}"
    return f"{path}:{patch.lineno}"


def build(args: argparse.Namespace, device: torch.device) -> tuple[GPTModel, TransformerConfig]:
    # fp32 throughout: bf16 would need megatron's Float16Module wrapper around the model, which
    # this P2P check does not need (the PP=2 runs of docs/findings.md used fp32 activations too).
    dtype = torch.float32
    config = TransformerConfig(
        num_layers=args.layers, hidden_size=args.hidden, num_attention_heads=args.heads,
        pipeline_model_parallel_size=2, pipeline_dtype=dtype, params_dtype=dtype,
        bf16=dtype is torch.bfloat16, variable_seq_lengths=True,
        batch_p2p_comm=args.variant != "unbatched", overlap_p2p_comm=False,
        use_cpu_initialization=device.type == "cpu",
        # Dense model, no MoE; but the default (allgather) dispatcher refuses variable lengths.
        moe_token_dispatcher_type="alltoall",
    )
    model = GPTModel(
        config=config, transformer_layer_spec=get_gpt_layer_local_spec(),
        vocab_size=args.vocab, max_sequence_length=args.seq,
        pre_process=parallel_state.is_pipeline_first_stage(),
        post_process=parallel_state.is_pipeline_last_stage(),
        share_embeddings_and_output_weights=False,
    )
    return model.to(device), config


def batches(args: argparse.Namespace, step: int, device: torch.device):
    """The same micro-batches on every rank: stage 0 uses the tokens, the last stage the labels.
    Sequence lengths differ between micro-batches (variable_seq_lengths)."""
    for micro in range(args.micro_batches):
        length = args.seq - 64 * (micro % 4)
        gen = torch.Generator().manual_seed(step * 1000 + micro)
        tokens = torch.randint(0, args.vocab, (args.micro_batch_size, length + 1), generator=gen)
        yield tokens[:, :-1].to(device), tokens[:, 1:].to(device)


def forward_step(data_iterator, model):
    tokens, labels = next(data_iterator)
    length = tokens.shape[1]
    position_ids = torch.arange(length, device=tokens.device).unsqueeze(0).expand_as(tokens)
    causal = torch.triu(torch.ones(1, 1, length, length, dtype=torch.bool,
                                   device=tokens.device), diagonal=1)
    output = model(tokens, position_ids, causal, labels=labels)

    def loss_func(output_tensor):
        loss = output_tensor.float().mean()
        return loss, {"lm loss": loss.detach()}

    return output, loss_func


def train(args: argparse.Namespace) -> dict:
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    dist.init_process_group("nccl")  # no device_id: lazy communicators, as the report's run
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1,
                                             pipeline_model_parallel_size=2)
    model_parallel_cuda_manual_seed(1234)
    patched = apply_swift_patch() if args.variant == "swift" else None
    model, config = build(args, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-5)
    schedule = get_forward_backward_func()
    step_s, losses = [], []
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        reduced = schedule(
            forward_step_func=forward_step, data_iterator=batches(args, step, device),
            model=[model], num_microbatches=args.micro_batches, seq_length=args.seq,
            micro_batch_size=args.micro_batch_size, decoder_seq_length=args.seq,
            forward_only=False)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= args.warmup:
            step_s.append(time.perf_counter() - start)
        if reduced:
            losses.append(float(torch.stack([r["lm loss"] for r in reduced]).mean()))
    dist.barrier()
    return {
        "variant": args.variant, "rank": dist.get_rank(), "schedule": schedule.__name__,
        "recorded": bool(os.environ.get("P2PAUDIT_TRACE")), "swift_patch": patched,
        "batch_p2p_comm": config.batch_p2p_comm,
        "variable_seq_lengths": config.variable_seq_lengths,
        "warmup": args.warmup, "step_s": step_s,
        "median_step_s": statistics.median(step_s) if step_s else None,
        "losses": losses, "torch": torch.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "gpu": torch.cuda.get_device_name(local),
    }


def cpu_check(args: argparse.Namespace) -> dict:
    """Everything up to the first forward: megatron's attention takes scratch memory and its RNG
    state from CUDA, so the forward itself (and the 1F1B schedule) run on GPUs only."""
    dist.init_process_group("gloo")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1,
                                             pipeline_model_parallel_size=2)
    patched = apply_swift_patch() if args.variant == "swift" else None
    model, config = build(args, torch.device("cpu"))
    schedule = get_forward_backward_func()
    assert schedule.__name__ == "forward_backward_pipelining_without_interleaving", schedule
    lengths = [tokens.shape[1] for tokens, labels in batches(args, 0, torch.device("cpu"))]
    assert len(lengths) == args.micro_batches and len(set(lengths)) > 1, lengths
    dist.barrier()
    return {"variant": args.variant, "rank": dist.get_rank(), "schedule": schedule.__name__,
            "swift_patch": patched, "batch_p2p_comm": config.batch_p2p_comm,
            "variable_seq_lengths": config.variable_seq_lengths, "lengths": lengths,
            "parameters": sum(p.numel() for p in model.parameters())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, required=True)
    parser.add_argument("--steps", type=int, default=5, help="timed steps")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--metrics", type=Path, required=True, help="directory for rank-N.json")
    parser.add_argument("--micro-batches", type=int, default=8)
    parser.add_argument("--micro-batch-size", type=int, default=1)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--cpu-check", action="store_true")
    args = parser.parse_args()
    result = cpu_check(args) if args.cpu_check else train(args)
    args.metrics.mkdir(parents=True, exist_ok=True)
    (args.metrics / f"rank-{result['rank']}.json").write_text(json.dumps(result, indent=1) + "\n")
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
