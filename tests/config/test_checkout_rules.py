"""Megatron-LM front-end rules confirmed against the checkout the run reads (issue 22 item 6).

megatron-core 0.15/0.16 wheels do not ship megatron/training, so rules/megatron-lm.toml cannot be
verified on those releases; a launch script inside a Megatron-LM checkout of that release runs the
checkout's own megatron/training. The fixture below is such a checkout, cut down to the lines the
rules cite, copied from NVIDIA/Megatron-LM core_v0.15.0 (0d7e02bd26d3eb347ad8d1bef625002babfa6df7):
megatron/core/package_info.py:4-7, megatron/core/model_parallel_config.py (ModelParallelConfig),
megatron/training/arguments.py:371-385, :585, :614 (validate_args), :1253
(core_transformer_config_from_args), :1549, :1974, :1981, :2561, :2563, :2591, :2600 (add_argument), and
pretrain_gpt.py (its `pretrain(` call). Its launch is examples/gpt3/train_gpt3_175b_distributed.sh's
shape at that tag (torchrun, 8 GPUs, pretrain_gpt.py from the checkout root).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import read_launch

PACKAGE_INFO = """\
MAJOR = 0
MINOR = 15
PATCH = 0
PRE_RELEASE = ''
"""

MODEL_PARALLEL_CONFIG = """\
from dataclasses import dataclass
from typing import Optional


@dataclass
class ModelParallelConfig:
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    sequence_parallel: bool = False
    context_parallel_size: int = 1
    expert_model_parallel_size: int = 1
    expert_tensor_parallel_size: Optional[int] = None
    use_ring_exchange_p2p: bool = False
"""

ARGUMENTS = """\
import argparse


def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    group = parser.add_argument_group(title='distributed')
    group.add_argument('--num-layers', type=int, default=None,
                       help='Number of transformer layers.')
    group.add_argument('--micro-batch-size', type=int, default=None,
                       help='Batch size per model instance (local batch size).')
    group.add_argument('--global-batch-size', type=int, default=None,
                       help='Training batch size.')
    group.add_argument('--tensor-model-parallel-size', type=int, default=1,
                       help='Degree of tensor model parallelism.')
    group.add_argument('--pipeline-model-parallel-size', type=int, default=1,
                       help='Degree of pipeline model parallelism.')
    group.add_argument('--no-overlap-p2p-communication', action='store_false',
                       help='overlap pipeline parallel communication with forward and backward chunks in 1F1B',
                       dest='overlap_p2p_comm')
    group.add_argument('--distributed-timeout-minutes', type=int, default=10,
                       help='Default timeout minutes for torch.distributed.')
    return parser.parse_args()


def validate_args(args, defaults={}):
    total_model_size = args.tensor_model_parallel_size * args.pipeline_model_parallel_size * args.context_parallel_size

    # Total model size.
    assert args.world_size % total_model_size == 0, (
        f"world size ({args.world_size}) is not divisible by total_model_size ({total_model_size=})"
    )

    # Pipeline model parallel size.
    args.transformer_pipeline_model_parallel_size = args.pipeline_model_parallel_size

    total_model_size = args.tensor_model_parallel_size * args.pipeline_model_parallel_size * args.context_parallel_size
    args.data_parallel_size = args.world_size // total_model_size

    # No --num-layers-per-virtual-pipeline-stage here: no virtual pipeline (:585).
    args.virtual_pipeline_model_parallel_size = None

    if args.virtual_pipeline_model_parallel_size is None:
        # Overlap P2P communication is disabled if not using the interleaved schedule (:614).
        args.overlap_p2p_comm = False


def core_transformer_config_from_args(args, config_class=None):
    kw_args = {}
    kw_args['batch_p2p_comm'] = not args.overlap_p2p_comm
    return kw_args
"""

PRETRAIN_GPT = """\
from megatron.training import pretrain

if __name__ == "__main__":
    pretrain(None, None, None, None)
"""


def checkout(tmp_path: Path, tp: int, version: tuple[int, int] = (0, 15)) -> Path:
    """A Megatron-LM checkout at `version` and its example launch (examples/gpt/train.sh)."""
    files = {
        "megatron/core/package_info.py": PACKAGE_INFO.replace("MINOR = 15", f"MINOR = {version[1]}"),
        "megatron/core/model_parallel_config.py": MODEL_PARALLEL_CONFIG,
        "megatron/training/arguments.py": ARGUMENTS,
        "pretrain_gpt.py": PRETRAIN_GPT,
        "examples/gpt/train.sh": textwrap.dedent(f"""\
            #!/bin/bash
            GPUS_PER_NODE=8
            NUM_NODES=1
            torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES pretrain_gpt.py \\
                --num-layers 8 --micro-batch-size 1 --global-batch-size 16 \\
                --tensor-model-parallel-size {tp} --pipeline-model-parallel-size 2
            """),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / "examples/gpt/train.sh"


def test_rules_whose_code_the_checkout_has_apply(tmp_path):
    launch = read_launch(checkout(tmp_path, tp=1))
    config = derive(launch, {"megatron-core": "0.15.0"}, torch_version="2.11.0")
    assert config.value("pipeline_model_parallel_size") == 2
    assert config.value("data_parallel_size") == 4
    assert config.value("batch_p2p_comm") is True
    got = config.get("batch_p2p_comm")
    assert "checkout" in got.source and "megatron/training/arguments.py" in got.source, got.source
    # A rule whose code this checkout lacks (mlm.etp-follows-tp) is not applied: unknown, and the
    # release is named outside the rules for it alone, not for every setting.
    assert config.value("expert_tensor_parallel_size") is UNKNOWN
    outside = config.outside_rules.get("megatron-lm 0.15.0", [])
    assert "expert_tensor_parallel_size" in outside and "batch_p2p_comm" not in outside
    assert not [f for f in config.findings if f.severity == "error"]


def test_an_arg_the_dataclass_lacks_takes_the_checkouts_parser_default(tmp_path):
    """0.15's --distributed-timeout-minutes is an add_argument (default=10), not the
    DistributedInitConfig field the rules cite for 0.17 on; hybrid_layer_pattern is no flag of
    0.15's parser at all."""
    launch = read_launch(checkout(tmp_path, tp=1))
    config = derive(launch, {"megatron-core": "0.15.0"}, torch_version="2.11.0")
    got = config.get("distributed_timeout_minutes")
    assert got.value == 10 and "megatron/training/arguments.py:" in got.source, got
    assert config.value("num_layers") == 8  # the flag the launch gives, not the parser's default
    assert config.value("hybrid_layer_pattern") is None
    assert config.value("virtual_pipeline_model_parallel_size") is None


def test_a_check_the_checkout_has_decides_start_up(tmp_path):
    launch = read_launch(checkout(tmp_path, tp=8))
    config = derive(launch, {"megatron-core": "0.15.0"}, torch_version="2.11.0")
    errors = [f for f in config.findings if f.severity == "error"]
    assert any("divisible" in f.message for f in errors), [f.message for f in config.findings]


def test_a_checkout_of_another_release_confirms_nothing(tmp_path):
    """The rules are confirmed for the release the checkout is: judged on 0.15.0, a 0.16 checkout
    says nothing about 0.15.0's code."""
    launch = read_launch(checkout(tmp_path, tp=1, version=(0, 16)))
    config = derive(launch, {"megatron-core": "0.15.0"}, torch_version="2.11.0")
    assert config.value("batch_p2p_comm") is UNKNOWN


def test_the_checkouts_release_is_the_one_judged(tmp_path):
    """Out of the box (no `# megatron-core==X`), a script run from a checkout of a release the
    schedules' rules verify is judged on that release, and says why."""
    launch = read_launch(checkout(tmp_path, tp=1))
    assert launch.pins.get("megatron-core") == "0.15.0"
    said = [f for f in launch.diagnostics if f.kind == "launch.checkout-release"]
    assert said and "megatron/core/package_info.py" in said[0].message


def test_a_stated_release_or_an_uncovered_checkout_is_left_alone(tmp_path):
    script = checkout(tmp_path, tp=1)
    script.write_text("# megatron-core==0.16.0\n" + script.read_text())
    assert read_launch(script).pins["megatron-core"] == "0.16.0"
    old = checkout(tmp_path / "old", tp=1, version=(0, 2))  # Megatron-LM 23.06 says 0.2.0
    assert "megatron-core" not in read_launch(old).pins
