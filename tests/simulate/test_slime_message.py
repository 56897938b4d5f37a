"""What a slime run's pipeline messages are, read from the slime checkout the run imports
(rules/slime.toml, confirmed against its code by auditor/rulebook/checkout.py).

THUDM/slime (commit 624b824a898ab0ec1fcb4d373004c7f3852bf515) slime/backends/megatron_utils/
arguments.py: `_set_default_megatron_args` sets `args.bf16 = not args.fp16` (:157) and
`args.seq_length = 4096` when unset (:164-165, under "# placeholders"); `validate_args` sets
`args.variable_seq_lengths = True` after Megatron-LM's (:82), and get_batch (slime/backends/
megatron_utils/data.py) packs a micro-batch's samples into one sequence. So the message dtype is
bfloat16 (float16 under --fp16), shapes are exchanged before each message, and the message's
length is the data's: simulate once said float32 (Megatron-LM's default without --bf16) and
exchanged no shapes. The script is written after scripts/run-qwen3.5-27B.sh (TP=4 with sequence
parallelism, PP=2, CP=4, hidden 5120, 4 x 8 actors), inside a checkout holding those two functions
as written there; copied out of any checkout, what slime decides is unknown, never Megatron-LM's
default.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.scan import ScanInputs, read_config, run_scan
from auditor.simulate.plan import SimulationPlan, plan

pytestmark = pytest.mark.wheels

ARGUMENTS = """def validate_args(args):
    # always use varlen
    args.variable_seq_lengths = True


def _set_default_megatron_args(args):
    # TODO: maybe change this after megatron has good fp8 support
    args.bf16 = not args.fp16
    # placeholders
    if args.seq_length is None:
        args.seq_length = 4096
    return args
"""

# train.py's flags as slime/utils/arguments.py:39-41 adds them (tests/realscripts/test_stacks_slime.py)
TRAIN = ("import argparse\n\n\ndef add_cluster_arguments(parser):\n"
         "    parser.add_argument('--actor-num-nodes', type=int, default=1)\n"
         "    parser.add_argument('--actor-num-gpus-per-node', type=int, default=8)\n"
         "    parser.add_argument('--colocate', action='store_true', default=False)\n"
         "    return parser\n")

SCRIPT = """#!/bin/bash
# megatron-core==0.17.0
set -ex
MODEL_ARGS=(
   --num-attention-heads 24
   --num-layers 64
   --hidden-size 5120
)
PERF_ARGS=(
   --tensor-model-parallel-size 4
   --sequence-parallel
   --pipeline-model-parallel-size 2
   --context-parallel-size 4
)
ray job submit --address="http://127.0.0.1:8265" \\
   -- python3 train.py \\
   --actor-num-nodes 4 \\
   --actor-num-gpus-per-node 8 \\
   --colocate {extra}\\
   "${{MODEL_ARGS[@]}}" \\
   "${{PERF_ARGS[@]}}"
"""


def _write(root: Path, checkout: bool, extra: str = "") -> Path:
    if checkout:
        package = root / "slime" / "backends" / "megatron_utils"
        package.mkdir(parents=True)
        for folder in (root / "slime", root / "slime" / "backends", package):
            (folder / "__init__.py").write_text("", encoding="utf-8")
        (package / "arguments.py").write_text(ARGUMENTS, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "scripts").mkdir()
    script = root / "scripts" / "run-qwen3.5-27B.sh"
    script.write_text(SCRIPT.format(extra=extra), encoding="utf-8")
    return script


def _plan(script: Path, monkeypatch, **given: str) -> tuple[dict, SimulationPlan]:
    monkeypatch.chdir(script.parent.parent)  # where slime's scripts are run from
    read = read_config(str(script), None)
    doc = run_scan(ScanInputs(str(script), overrides={"micro_batch_size": "1", **given},
                              torch_version="2.10.0"), read)
    return doc, plan(doc, *read, microbatches=4)


@pytest.mark.parametrize("extra, dtype, why", [("", "bfloat16", "slime: bf16 = not fp16 = True"),
                                               ("--fp16 ", "float16", "--fp16"),
                                               # slime turns --bf16 off under --fp16 (:157)
                                               ("--bf16 --fp16 ", "float16", "--fp16")])
def test_in_its_checkout_slime_sends_its_dtype_after_a_shape_exchange(tmp_path, monkeypatch, extra, dtype, why):
    doc, p = _plan(_write(tmp_path, checkout=True, extra=extra), monkeypatch)
    assert p.get("dtype") == dtype and why in p.values["dtype"].provenance
    assert p.get("variable_seq_lengths") is True
    assert doc["config"]["sources"]["variable_seq_lengths"].startswith("slime:")
    (step,) = p.unknown  # the length alone, as the data makes it
    assert "placeholder" in step and step.endswith("give it with --set seq_length=N")


def test_the_length_slime_leaves_to_the_data_is_given_with_the_step_it_names(tmp_path, monkeypatch):
    _, p = _plan(_write(tmp_path, checkout=True), monkeypatch, seq_length="8192")
    assert p.unknown == []
    assert p.message_bytes == 8192 // 4 * 1 * 5120 * 2  # sequence parallel over TP=4, bfloat16


def test_out_of_its_checkout_what_slime_sets_is_unknown_never_megatron_lms_default(tmp_path, monkeypatch):
    _, p = _plan(_write(tmp_path, checkout=False), monkeypatch)
    assert p.get("dtype") is None and "slime's code is not here" in p.values["dtype"].provenance
    assert p.get("variable_seq_lengths") is None
    assert any(s.endswith("--set torch_dtype=bfloat16|float16|float32") for s in p.unknown)


def test_out_of_its_checkout_a_precision_flag_does_not_decide_what_slime_may_override(tmp_path, monkeypatch):
    """`--bf16`: slime's code turns bf16 on or off whatever the flag says (`not fp16`, :157);
    without that code the switch is open, never the flag's."""
    _, p = _plan(_write(tmp_path, checkout=False, extra="--bf16 "), monkeypatch)
    assert p.get("dtype") is None and "slime's code is not here" in p.values["dtype"].provenance
