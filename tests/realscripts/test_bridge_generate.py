"""A script rule may say NOT A PIPELINE RUN by the script's name only where the script's code names
no pipeline schedule entry (issue 22 item 11, sweep).

Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit 067f987df03b8355b03192d88d70f1709fedf51a):
examples/models/qwen/qwen3_vl/inference.sh runs `python -m torch.distributed.run
--nproc_per_node=4 examples/conversion/hf_to_megatron_generate_vlm.py ... --tp 2 --pp 2`, and
examples/conversion/hf_to_megatron_generate_text.py:31,308-323 does `from
megatron.core.pipeline_parallel.schedules import get_forward_backward_func` and
`get_forward_backward_func()(..., num_microbatches=1, forward_only=True, ...)`: at PP 2 a
forward-only pipeline schedule, not a checkpoint conversion, although rules/megatron-bridge.toml
names `examples/conversion/*.py` a conversion. examples/conversion/hf_megatron_roundtrip_multi_gpu.py
(examples/models/qwen/qwen3_vl/conversion.sh) names no schedule and stays one.
"""

from __future__ import annotations

from auditor.config.launch import parse_launch

GENERATE = '''"""Generate text with a Megatron model (hf_to_megatron_generate_text.py's shape)."""
import argparse

from megatron.core.pipeline_parallel.schedules import get_forward_backward_func


def main(args):
    fwd_bwd_function = get_forward_backward_func()
    return fwd_bwd_function(forward_step_func=None, data_iterator=None, model=[], num_microbatches=1,
                            forward_only=True, seq_length=8, micro_batch_size=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    main(parser.parse_args())
'''

ROUNDTRIP = '''"""Load a Hugging Face model into Megatron at --tp/--pp and export it back (roundtrip's shape)."""
import argparse

from megatron.bridge import AutoBridge


def main(args):
    bridge = AutoBridge.from_hf_pretrained(args.hf_model_id)
    model = bridge.to_megatron_provider()
    model.pipeline_model_parallel_size = args.pp
    model.train()
    return bridge.save_hf_pretrained(model, "out")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--hf-model-id")
    parser.add_argument("--pp", type=int, default=1)
    main(parser.parse_args())
'''


def _launch(tmp_path, name: str, code: str):
    conversion = tmp_path / "examples" / "conversion"
    conversion.mkdir(parents=True)
    (conversion / name).write_text(code)
    script = tmp_path / "inference.sh"
    script.write_text(f"uv run python -m torch.distributed.run --nproc_per_node=4 examples/conversion/{name} "
                      "--hf_model_path Qwen/Qwen3-VL-8B-Instruct --prompt 'hi' --tp 2 --pp 2\n")
    return parse_launch(script.read_text(), str(script))


def test_a_generate_script_that_runs_a_schedule_is_not_called_a_conversion(tmp_path):
    config = _launch(tmp_path, "hf_to_megatron_generate_text.py", GENERATE)
    assert not [d for d in config.diagnostics if d.kind == "launch.not-pipeline"], config.diagnostics
    assert config.flags["pp"].value == "2"


def test_a_conversion_script_that_names_no_schedule_stays_one(tmp_path):
    config = _launch(tmp_path, "hf_megatron_roundtrip_multi_gpu.py", ROUNDTRIP)
    said = [d for d in config.diagnostics if d.kind == "launch.not-pipeline"]
    assert said and "checkpoint conversion" in said[0].message
