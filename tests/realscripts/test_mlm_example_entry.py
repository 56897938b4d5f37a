"""A training script of Megatron-LM's examples that is not named pretrain_*.py but builds
Megatron-LM's parser is Megatron-LM's front end (issue 22 items 4 and 6).

The launch reproduces NVIDIA/Megatron-LM core_v0.15.0 (0d7e02bd26d3eb347ad8d1bef625002babfa6df7)
examples/mimo/scripts/run_mock_train.sh: bash arrays of flags (`MODEL_PARALLEL_ARGS=(...
--pipeline-model-parallel-size 1 ...)`), `if [ "$1" = "-d" ]` choosing a debugpy launch, a
DRY_RUN `echo` of the command, and `torchrun ${DISTRIBUTED_ARGS[@]} examples/mimo/train.py
${MODEL_PARALLEL_ARGS[@]} ...` from the checkout root. Its train.py calls megatron.training's
`pretrain(..., extra_args_provider=add_mimo_args)`, a function of the script adding
`--dataset-provider`/`--model-provider` (examples/mimo/train.py:51-57, :247-253); the same shape
as examples/multimodal/train.py of core_v0.16.0 (3bec9aa97d).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from auditor.config.derive import derive
from auditor.config.launch import read_launch
from tests.config.test_checkout_rules import checkout

TRAIN = """\
from megatron.training import get_args, pretrain


def add_mimo_args(parser):
    group = parser.add_argument_group('MIMO', 'MIMO specific arguments')
    group.add_argument('--dataset-provider', type=str, default='mock')
    group.add_argument('--model-provider', type=str, default='mock')
    return parser


if __name__ == "__main__":
    pretrain(None, None, None, None, extra_args_provider=add_mimo_args)
"""

LAUNCH = """\
#!/bin/bash
DRY_RUN=false
GPUS_PER_NODE=2
NUM_NODES=1
DEBUG_MODE=false
if [ "$1" = "-d" ]; then
  DEBUG_MODE=true
fi
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
)
MODEL_PARALLEL_ARGS=(
	--tensor-model-parallel-size 2
	--pipeline-model-parallel-size PP
)
TRAINING_ARGS=(
    --micro-batch-size 2
    --global-batch-size 4
    --num-layers 4
    --dataset-provider mock
    --model-provider mock
)
if [ "$DEBUG_MODE" = true ]; then
  debugpy-run -p :5678 -m torch.distributed.run -- ${DISTRIBUTED_ARGS[@]} examples/mimo/train.py \\
    ${TRAINING_ARGS[@]} ${MODEL_PARALLEL_ARGS[@]}
else
  if [ "$DRY_RUN" = true ]; then
    echo "torchrun ${DISTRIBUTED_ARGS[@]} examples/mimo/train.py ${TRAINING_ARGS[@]}"
  else
    torchrun ${DISTRIBUTED_ARGS[@]} examples/mimo/train.py \\
    ${TRAINING_ARGS[@]} \\
    ${MODEL_PARALLEL_ARGS[@]}
  fi
fi
"""


def mimo(tmp_path: Path, pp: int) -> Path:
    checkout(tmp_path, tp=1)
    (tmp_path / "examples/mimo/scripts").mkdir(parents=True)
    (tmp_path / "examples/mimo/train.py").write_text(TRAIN)
    script = tmp_path / "examples/mimo/scripts/run_mock_train.sh"
    script.write_text(textwrap.dedent(LAUNCH).replace("PP", str(pp)))
    return script


def test_an_example_train_py_that_calls_pretrain_is_megatron_lms_front_end(tmp_path):
    launch = read_launch(mimo(tmp_path, pp=1))
    config = derive(launch, {"megatron-core": "0.15.0"}, torch_version="2.11.0")
    got = config.get("pipeline_model_parallel_size")
    assert got.value == 1, got
    assert "--pipeline-model-parallel-size" in got.provenance
    assert config.value("data_parallel_size") == 1  # 2 ranks / TP 2
    assert not [f for f in config.findings if f.severity == "error"], config.findings


def test_its_flags_decide_start_up_as_pretrain_gpts_do(tmp_path):
    """PP 2 x TP 2 on 2 ranks: Megatron-LM's validate_args (read from the checkout) stops it."""
    launch = read_launch(mimo(tmp_path, pp=2))
    config = derive(launch, {"megatron-core": "0.15.0"}, torch_version="2.11.0")
    assert config.value("pipeline_model_parallel_size") == 2
    assert any("divisible" in f.message for f in config.findings if f.severity == "error")


def test_a_script_calling_megatron_trainings_pretrain_is_one_without_a_checkout(tmp_path):
    """No Megatron-LM checkout around the script: its call of megatron.training's pretrain says
    it builds Megatron-LM's parser (config/parser_entry.py; tests/realscripts/test_mlm_entry_by_call.py)."""
    (tmp_path / "train.py").write_text(TRAIN)
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 2 train.py --pipeline-model-parallel-size 1\n")
    launch = read_launch(script)
    config = derive(launch, {"megatron-core": "0.17.0"}, torch_version="2.11.0")
    assert launch.builds_parser == "megatron-lm"
    assert config.value("pipeline_model_parallel_size") == 1


# examples/multimodal/train.py of core_v0.16.0 (3bec9aa97d): `from multimodal_args import
# add_multimodal_extra_args` (examples/multimodal/multimodal_args.py:5, a module beside the
# script, on sys.path as the script's directory) and `pretrain(..., extra_args_provider=
# add_multimodal_extra_args)` (train.py:390).
MULTIMODAL_TRAIN = """\
import sys
from multimodal_args import add_multimodal_extra_args
from megatron.training import get_args, pretrain

if __name__ == "__main__":
    pretrain(None, None, None, None, extra_args_provider=add_multimodal_extra_args)
"""

MULTIMODAL_ARGS = """\
def add_multimodal_extra_args(parser):
    \"\"\"Extra arguments.\"\"\"
    group = parser.add_argument_group(title='multimodal arguments')
    group.add_argument('--dataset-config', type=str, default=None)
    group.add_argument("--prompt-path", type=str, default=None)
    return parser
"""


def multimodal(tmp_path: Path, extra: str) -> Path:
    checkout(tmp_path, tp=1)
    (tmp_path / "examples/multimodal").mkdir(parents=True)
    (tmp_path / "examples/multimodal/train.py").write_text(MULTIMODAL_TRAIN)
    (tmp_path / "examples/multimodal/multimodal_args.py").write_text(MULTIMODAL_ARGS)
    script = tmp_path / "examples/multimodal/pretrain.sh"
    script.write_text("torchrun --nproc_per_node 8 examples/multimodal/train.py --num-layers 4 "
                      f"--tensor-model-parallel-size 4 --prompt-path p.json --dataset-config d.yaml {extra}\n")
    return script


def test_a_provider_imported_from_beside_the_script_is_read(tmp_path):
    launch = read_launch(multimodal(tmp_path, ""))
    assert not [f for f in launch.diagnostics if f.kind == "launch.megatron-spelling"], launch.diagnostics


def test_with_every_provider_read_a_flag_no_parser_has_is_rejected(tmp_path):
    launch = read_launch(multimodal(tmp_path, "--prompt-pth p.json"))
    bad = [f for f in launch.diagnostics if f.kind == "launch.megatron-spelling"]
    assert [f.severity for f in bad] == ["error"] and "--prompt-pth" in bad[0].message


def test_a_megatron_deepspeed_front_end_runs_no_megatron_lm_stage(tmp_path):
    """Megatron-DeepSpeed's pretrain_gpt.py builds its megatron/arguments.py parser too, but with
    --deepspeed the run is labelled for DeepSpeed's stack (rules/deepspeed.toml [[front_end]]):
    Megatron-LM's stages stay off it (tests/realscripts/test_megatron_deepspeed.py's checkout)."""
    from tests.realscripts.test_megatron_deepspeed import LLAMA2
    from tests.realscripts.test_megatron_deepspeed import checkout as mds_checkout

    launch = read_launch(mds_checkout(tmp_path, "run.sh", LLAMA2.format(torch="2.13.0", detail="")))
    assert launch.launcher.startswith("megatron-deepspeed") and launch.builds_parser == ""


# NVIDIA/Megatron-LM d98e8a64dd examples/multimodal/run_text_generation.py: its own provider
# add_text_generation_args (:53-103, `initialize_megatron(extra_args_provider=...)`) adds the
# generation flags and hands the parser on to add_multimodal_extra_args (:101), imported from
# multimodal_args beside the script (:20), which adds --num-frames (multimodal_args.py:64-69);
# it generates with megatron.core.inference.engines (:30).
# examples/multimodal/nvlm/run_text_generation_qwen25_7b_internvit_video.sh passes
# `--pipeline-model-parallel-size 1` (:91) and `--num-frames ${NUM_FRAMES}` (:127), the caller's.
GENERATE = """\
from multimodal_args import add_multimodal_extra_args
from megatron.core.inference.engines import StaticInferenceEngine
from megatron.training.initialize import initialize_megatron


def add_text_generation_args(parser):
    group = parser.add_argument_group(title='text generation')
    group.add_argument("--out-seq-length", type=int, default=128)
    parser = add_multimodal_extra_args(parser)
    return parser


if __name__ == "__main__":
    initialize_megatron(extra_args_provider=add_text_generation_args)
"""

MULTIMODAL_FRAMES = MULTIMODAL_ARGS.replace(
    "    return parser", "    group.add_argument('--num-frames', type=int, default=1)\n    return parser")


def generation(tmp_path: Path, extra: str) -> Path:
    checkout(tmp_path, tp=1)
    for rel, text in {"examples/multimodal/run_text_generation.py": GENERATE,
                      "examples/multimodal/multimodal_args.py": MULTIMODAL_FRAMES,
                      "megatron/core/inference/engines/__init__.py": ""}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    script = tmp_path / "run_text_generation.sh"  # run from the checkout's root, as the NVLM scripts are
    script.write_text("torchrun --nproc_per_node 8 examples/multimodal/run_text_generation.py --num-layers 4 "
                      f"--tensor-model-parallel-size 4 --pipeline-model-parallel-size 1 {extra}\n")
    return script


def test_a_module_beside_the_script_that_its_provider_calls_is_read(tmp_path):
    launch = read_launch(generation(tmp_path, "--out-seq-length 64 --num-frames 8"))
    assert not [f for f in launch.diagnostics if f.kind == "launch.megatron-spelling"], launch.diagnostics
    bad = [f for f in read_launch(generation(tmp_path / "b", "--num-frame 8")).diagnostics
           if f.kind == "launch.megatron-spelling"]
    assert [f.severity for f in bad] == ["error"] and "--num-frame" in bad[0].message


def test_its_unknown_value_is_one_word_and_the_run_is_inference_at_pp_1(tmp_path):
    """`--num-frames ${NUM_FRAMES}` takes one value by the flag read beside the script: not a word
    that may set the pipeline size, so the entry is read as inference at pipeline size 1."""
    launch = read_launch(generation(tmp_path, "--num-frames ${NUM_FRAMES}"))
    unknown = [f for f in launch.diagnostics if f.kind == "launch.unknown-values"]
    assert unknown and not unknown[0].detail.get("unchecked"), unknown
    said = [f.message for f in launch.diagnostics if f.kind == "launch.not-pipeline"]
    assert said and "megatron.core.inference.engines" in said[0] and "pipeline size 1" in said[0], said
