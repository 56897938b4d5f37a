"""A text-generation entry that generates with megatron-core's inference engine and names no
schedule runs no forward_backward schedule: at PP > 1 its stages exchange through the inference
wrapper's forward_pass_with_pipeline_parallel, one op one way per batch, so the scan starts from
that engine (rules/megatron-core.toml "megatron-core inference engine") and the batches'
coalescing decides nothing (mcore.inference-one-way).

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a) scripts/inference/text_generation.py: it imports
StaticInferenceEngine from megatron.core.inference.engines (:33-37), builds the model at `--pp`
(:212-226) and generates (:239-242); examples/models/nemotron/nemotron_3/ultra/slurm_inference.sh
runs it with `--tp 1 --pp 4 --ep 8` (:132). megatron-core 0.17.0's
abstract_model_inference_wrapper.py forward_pass_with_pipeline_parallel receives with
recv_from_prev_pipeline_rank_ and sends with send_to_next_pipeline_rank, each a batch_isend_irecv
of one op (communication_utils.py:83-142). The provider's sizes are written as the Bridge's
generators write them (examples/conversion/hf_to_megatron_generate_text.py:177-200).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

GENERATE = '''"""Text generation with megatron-core's static inference engine."""
import argparse

from megatron.bridge.inference.text_generation import load_bridge_model
from megatron.core.inference.engines import StaticInferenceEngine


def main(args):
    model_provider = load_bridge_model(args.hf_model_path)
    model_provider.tensor_model_parallel_size = args.tp
    model_provider.pipeline_model_parallel_size = args.pp
    model = model_provider.provide_distributed_model(wrap_with_ddp=False)
    engine = StaticInferenceEngine(model, max_batch_size=1)
    return engine.generate(prompts=[args.prompt])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--hf_model_path", type=str, required=True)
    parser.add_argument("--prompt", type=str, default="Hello")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    main(parser.parse_args())
'''
# The same entry with a training step beside it: the schedule stays its entry point.
TRAINS_TOO = GENERATE.replace(
    "from megatron.core.inference.engines import StaticInferenceEngine",
    "from megatron.core.inference.engines import StaticInferenceEngine\n"
    "from megatron.core.pipeline_parallel.schedules import get_forward_backward_func").replace(
    "    return engine.generate(prompts=[args.prompt])",
    "    get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=model,\n"
    "                                num_microbatches=8, seq_length=8, micro_batch_size=1)\n"
    "    return engine.generate(prompts=[args.prompt])")

# Entries that name no schedule entry but train through a framework loop of their own name
# (review r45-infer): Megatron-Bridge 067f987df0 src/megatron/bridge/training/finetune.py runs
# train.py's get_forward_backward_func; ms-swift's megatron_sft_main runs megatron-core's schedule.
# Neither is read as certainly training nothing: the schedule stays their entry point.
BRIDGE_FINETUNE = GENERATE.replace(
    "from megatron.core.inference.engines import StaticInferenceEngine",
    "from megatron.core.inference.engines import StaticInferenceEngine\n"
    "from megatron.bridge.training.finetune import finetune").replace(
    "    engine = StaticInferenceEngine(", "    finetune(config=model_provider, forward_step_func=None)\n"
    "    engine = StaticInferenceEngine(")
SWIFT_SFT = GENERATE.replace(
    "from megatron.core.inference.engines import StaticInferenceEngine",
    "from megatron.core.inference.engines import StaticInferenceEngine\n"
    "from swift.megatron import megatron_sft_main").replace(
    "    engine = StaticInferenceEngine(", "    megatron_sft_main()\n    engine = StaticInferenceEngine(")

LAUNCH = """\
uv run python -m torch.distributed.run --nproc_per_node=4 \\
    scripts/inference/text_generation.py --hf_model_path x/y --tp 1 --pp 2
"""


def _scan(tmp_path: Path, code: str, detail: bool = False) -> dict:
    (tmp_path / "scripts/inference").mkdir(parents=True, exist_ok=True)
    (tmp_path / "scripts/inference/text_generation.py").write_text(code)
    (tmp_path / "inference.sh").write_text(("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n" if detail else "") + LAUNCH)
    torch = ["--torch", "2.10.0", "--set", "distributed_backend=nccl"] if detail else ["--torch", "2.11.0"]
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(tmp_path / "inference.sh"),
                           "--target", "megatron-core==0.17.0", *torch, "--format", "json"],
                          check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    return json.loads(proc.stdout)


def test_an_inference_entry_at_pp_2_starts_from_the_engine_and_is_clean(tmp_path) -> None:
    doc = _scan(tmp_path, GENERATE)
    assert doc["entries"] == ["megatron-core inference engine"], doc["entries"]
    reached = {s["path"].rpartition("/")[2] for s in doc["sites"] if s["reachable"] == "yes"}
    assert reached == {"communication_utils.py"}, reached
    assert doc["verdict"]["status"] == "clean", doc["verdict"]


def test_an_entry_that_also_trains_keeps_the_schedule(tmp_path) -> None:
    doc = _scan(tmp_path, TRAINS_TOO)
    assert doc["entries"] == ["megatron-core pipeline schedule"], doc["entries"]


@pytest.mark.parametrize("code", [BRIDGE_FINETUNE, SWIFT_SFT], ids=["bridge-finetune", "swift-sft"])
def test_an_entry_training_through_a_framework_loop_keeps_the_schedule(tmp_path, code: str) -> None:
    doc = _scan(tmp_path, code, detail=True)
    assert doc["entries"] == ["megatron-core pipeline schedule"], doc["entries"]
    assert doc["verdict"]["status"] in ("findings", "inconclusive"), doc["verdict"]
