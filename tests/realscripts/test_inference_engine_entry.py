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

ROOT = Path(__file__).resolve().parents[2]

GENERATE = '''"""Text generation with megatron-core's static inference engine."""
import argparse

from megatron.bridge import AutoBridge
from megatron.core.inference.engines import StaticInferenceEngine


def main(args):
    bridge = AutoBridge.from_hf_pretrained(args.hf_model_path)
    model_provider = bridge.to_megatron_provider(load_weights=True)
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

LAUNCH = """\
uv run python -m torch.distributed.run --nproc_per_node=4 \\
    scripts/inference/text_generation.py --hf_model_path x/y --tp 1 --pp 2
"""


def _scan(tmp_path: Path, code: str) -> dict:
    (tmp_path / "scripts/inference").mkdir(parents=True, exist_ok=True)
    (tmp_path / "scripts/inference/text_generation.py").write_text(code)
    (tmp_path / "inference.sh").write_text(LAUNCH)
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(tmp_path / "inference.sh"),
                           "--target", "megatron-core==0.17.0", "--torch", "2.11.0", "--format", "json"],
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
