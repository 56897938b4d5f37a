"""Flags a checkout's parser accepts and its validate_args refuses (config/validate_stops.py).

The mini checkouts reproduce:
- bigcode-project/Megatron-LM @ 7c325cd34a109880a3fc03432e8b3e4576b22701 megatron/arguments.py:
  `--checkpoint-activations` defined (:804), validate_args (:61) asserting `args.batch_size is
  None` (:124) and ending on `if args.checkpoint_activations:` with a print under `if args.rank ==
  0:` and `exit()` (:134-138); megatron/initialize.py:54 runs it from initialize_megatron;
  examples/detxoify_lm/finetune_gpt_distributed-1.3b.sh:55 passes the flag to finetune_gpt.py,
  which calls `pretrain(..., args_defaults={'tokenizer_type': 'GPT2BPETokenizer'})` (:144);
- microsoft/Megatron-DeepSpeed @ f4157bea69 megatron/arguments.py:136-143: the same `if` commented
  out ("DeepSpeed still relies on the old activation checkpointing mechanism"), the flag kept;
- NVIDIA/Megatron-LM @ d98e8a64ddf3 megatron/training/arguments.py: parse_and_validate_args
  (:88-108) calling validate_args, which asserts `args.model_parallel_size is None` (:597).
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from auditor.config.launch import read_launch
from auditor.config.validate_stops import stops

PARSER = '''
import argparse

def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser.add_argument('--num-layers', type=int, default=None)
    parser.add_argument('--batch-size', type=int, default=None)
    parser.add_argument('--model-parallel-size', type=int, default=None)
    parser.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    parser.add_argument('--checkpoint-activations', action='store_true')
    return parser.parse_args()

def validate_args(args, defaults={}):
    if args.data_path:
        setattr(args, "valid_weighted_split_names", None)
    {body}
'''

BIGCODE = '''
    assert args.batch_size is None, '--batch-size argument is no longer valid'
    del args.batch_size
    assert args.model_parallel_size is None, '--model-parallel-size is no longer valid'
    del args.model_parallel_size

    if args.checkpoint_activations:
        if args.rank == 0:
            print('--checkpoint-activations is no longer valid, use --recompute-activations')
        exit()
    del args.checkpoint_activations
'''

MDS = '''
    assert args.batch_size is None, '--batch-size argument is no longer valid'
    del args.batch_size
    # if args.checkpoint_activations:
    #     exit()
    if args.recompute_activations:
        args.recompute_granularity = 'selective'
'''

# bigcode megatron/initialize.py:48-54 and megatron/training.py (pretrain calls initialize_megatron)
INITIALIZE = '''
from megatron.arguments import parse_args, validate_args

def initialize_megatron(extra_args_provider=None, args_defaults={}, ignore_unknown_args=False):
    args = parse_args(extra_args_provider, ignore_unknown_args)
    validate_args(args, args_defaults)
'''
TRAINING = '''
from megatron.initialize import initialize_megatron

def pretrain(train_valid_test_dataset_provider, model_provider, forward_step_func, args_defaults={}):
    initialize_megatron(args_defaults=args_defaults)
'''
# d98e8a64dd: parse_and_validate_args (megatron/training/arguments.py:88-108) is what runs validate_args;
# pretrain_gpt.py:525 calls it, then pretrain; initialize_megatron reads the args already parsed
PARSE_AND_VALIDATE = '''
def parse_and_validate_args(extra_args_provider=None, ignore_unknown_args=False, args_defaults={}):
    args = parse_args(extra_args_provider, ignore_unknown_args)
    if args.yaml_cfg is not None:
        args = validate_yaml(args, args_defaults)
    else:
        validate_args(args, args_defaults)
    return args
'''
D98_ENTRY = '''
from megatron.training import pretrain
from megatron.training.arguments import parse_and_validate_args
if __name__ == "__main__":
    args = parse_and_validate_args(args_defaults={'tokenizer_type': 'GPT2BPETokenizer'})
    pretrain(train_valid_test_datasets_provider, model_provider, forward_step)
'''

ENTRY = '''
from megatron.training import pretrain
if __name__ == "__main__":
    pretrain(train_valid_test_datasets_provider, model_provider, forward_step,
             args_defaults={'tokenizer_type': 'GPT2BPETokenizer'})
'''

TOOL = '''
from megatron.arguments import parse_args
if __name__ == "__main__":
    args = parse_args()
'''

SCRIPT = '''#!/bin/bash
torchrun --nproc_per_node 8 {entry} --num-layers 24 --pipeline-model-parallel-size 2 {extra}
'''


def checkout(tmp_path: Path, body: str, extra: str, entry: str = "pretrain_gpt.py", code: str = ENTRY,
             parser: str = "megatron/arguments.py", script: str = SCRIPT) -> Path:
    """A checkout whose validate_args ends with `body`, an entry `entry` and examples/run.sh."""
    files = {parser: PARSER.replace("{body}", dedent(body).strip().replace("\n", "\n    ")), entry: code}
    if parser == "megatron/arguments.py":
        files |= {"megatron/initialize.py": INITIALIZE, "megatron/training.py": TRAINING}
    else:
        files[parser] += PARSE_AND_VALIDATE
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(dedent(text))
    run = tmp_path / "examples" / "run.sh"
    run.parent.mkdir(exist_ok=True)
    run.write_text(script.format(entry=entry, extra=extra))
    return run


def said(config) -> list[tuple[str, str, dict]]:
    return [(d.severity, d.message, d.detail) for d in config.diagnostics if d.kind == "launch.validate-stop"]


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_flag_the_fork_s_validate_args_exits_on_does_not_start(tmp_path):
    run = checkout(tmp_path, BIGCODE, "--checkpoint-activations")
    found = said(read_launch(run, megatron_version="0.19.2"))
    line = _line(tmp_path / "megatron/arguments.py", "if args.checkpoint_activations:")
    assert len(found) == 1 and found[0][0] == "error", found
    assert f"megatron/arguments.py:{line}" in found[0][1] and "`--checkpoint-activations`" in found[0][1]
    assert found[0][2]["category"] == "config"


def test_the_stop_names_the_fork_s_arguments_file_from_the_checkout_root(tmp_path):
    """bigcode-project/Megatron-LM@7c325cd34a examples/detxoify_lm/finetune_gpt_distributed-1.3b.sh:55:
    the cause names megatron/arguments.py as the checkout does, not by the auditing machine's
    absolute path, which wrapped the DOES NOT START headline over three lines of the first screen."""
    run = checkout(tmp_path, BIGCODE, "--checkpoint-activations")
    found = said(read_launch(run, megatron_version="0.19.2"))
    line = _line(tmp_path / "megatron/arguments.py", "if args.checkpoint_activations:")
    assert found[0][1].startswith(f"`--checkpoint-activations` ends the run before it trains: "
                                  f"megatron/arguments.py:{line} validate_args"), found
    assert str(tmp_path) not in found[0][1], found


def test_the_same_flag_on_a_fork_that_keeps_it_is_not_a_stop(tmp_path):
    run = checkout(tmp_path, MDS, "--checkpoint-activations --batch-size 4")
    found = said(read_launch(run, megatron_version="0.19.2"))
    assert [(s, "`--batch-size`" in m) for s, m, _ in found] == [("error", True)], found


def test_a_deprecated_value_flag_is_refused_by_its_assert(tmp_path):
    run = checkout(tmp_path, BIGCODE, "--model-parallel-size 2", code=D98_ENTRY,
                   parser="megatron/training/arguments.py")
    found = said(read_launch(run, megatron_version="0.19.2"))
    line = _line(tmp_path / "megatron/training/arguments.py", "assert args.model_parallel_size is None")
    assert [(s, f"arguments.py:{line}" in m) for s, m, _ in found] == [("error", True)], found


def test_an_entry_that_only_parses_reaches_no_validate_args(tmp_path):
    run = checkout(tmp_path / "tool", BIGCODE, "--batch-size 4", entry="tools/merge.py", code=TOOL)
    assert said(read_launch(run, megatron_version="0.19.2")) == []
    run = checkout(tmp_path / "pretrain", BIGCODE, "--batch-size 4", entry="tools/merge.py")
    assert [s for s, _, _ in said(read_launch(run, megatron_version="0.19.2"))] == ["error"]


def test_pretrain_reaches_no_validate_args_where_only_parse_and_validate_args_runs_it(tmp_path):
    code = D98_ENTRY.replace("    args = parse_and_validate_args(args_defaults={'tokenizer_type': 'GPT2BPETokenizer'})\n", "")
    run = checkout(tmp_path / "pretrain", BIGCODE, "--model-parallel-size 2", code=code,
                   parser="megatron/training/arguments.py")
    assert said(read_launch(run, megatron_version="0.19.2")) == []
    run = checkout(tmp_path / "both", BIGCODE, "--model-parallel-size 2", code=D98_ENTRY,
                   parser="megatron/training/arguments.py")
    assert [s for s, _, _ in said(read_launch(run, megatron_version="0.19.2"))] == ["error"]


def test_a_flag_given_on_an_undecided_branch_leaves_the_run_undecided(tmp_path):
    script = '''#!/bin/bash
EXTRA=""
if [ "$CKPT" = 1 ]; then
    EXTRA="--checkpoint-activations"
fi
torchrun --nproc_per_node 8 {entry} --num-layers 24 --pipeline-model-parallel-size 2 $EXTRA {extra}
'''
    run = checkout(tmp_path, BIGCODE, "", script=script)
    found = said(read_launch(run, megatron_version="0.19.2"))
    line = _line(tmp_path / "megatron/arguments.py", "if args.checkpoint_activations:")
    assert len(found) == 1 and found[0][0] == "warning", found
    assert f"arguments.py:{line}" in found[0][2]["undecided"]
    assert found[0][2]["decide"].startswith("the flag --checkpoint-activations")


def test_a_setting_assigned_before_the_assert_is_no_stop(tmp_path):
    body = "args.batch_size = None\n" + dedent(BIGCODE)
    run = checkout(tmp_path, body, "--batch-size 4 --model-parallel-size 2")
    found = said(read_launch(run, megatron_version="0.19.2"))
    assert [(s, "`--model-parallel-size`" in m) for s, m, _ in found] == [("error", True)], found


def test_an_assert_under_another_test_is_no_stop(tmp_path):
    body = ("if args.num_layers:\n    assert args.batch_size is None\n"
            "assert args.model_parallel_size is None\n")
    run = checkout(tmp_path, body, "--batch-size 4 --model-parallel-size 2")
    assert [s.dest for s in stops(tmp_path / "megatron/arguments.py")] == ["model_parallel_size"]
    found = said(read_launch(run, megatron_version="0.19.2"))
    assert [(s, "`--model-parallel-size`" in m) for s, m, _ in found] == [("error", True)], found


def test_args_defaults_setting_the_flag_is_no_stop(tmp_path):
    code = ENTRY.replace("'tokenizer_type'", "'checkpoint_activations': False, 'tokenizer_type'")
    run = checkout(tmp_path, BIGCODE, "--checkpoint-activations --batch-size 4", code=code)
    found = said(read_launch(run, megatron_version="0.19.2"))
    assert [(s, "`--batch-size`" in m) for s, m, _ in found] == [("error", True)], found


def test_a_flag_that_may_skip_validate_args_leaves_the_stop_undecided(tmp_path):
    run = checkout(tmp_path, BIGCODE + "\n", "--checkpoint-activations --use-checkpoint-args")
    (tmp_path / "megatron/arguments.py").write_text((tmp_path / "megatron/arguments.py").read_text().replace(
        "    return parser.parse_args()", "    parser.add_argument('--use-checkpoint-args', action='store_true')\n"
        "    return parser.parse_args()"))
    found = said(read_launch(run, megatron_version="0.19.2"))
    assert [s for s, _, _ in found] == ["warning"] and "--use-checkpoint-args" in found[0][1], found


# After review r46-c (inputs /tmp/rv46-c/): entries and validate_args bodies written to probe.
DIRECT = '''
from megatron.arguments import parse_args, validate_args
from megatron.training import pretrain
if __name__ == "__main__":
    args = parse_args()
    {touch}
    validate_args(args)
    pretrain(train_valid_test_datasets_provider, model_provider, forward_step)
'''


def test_the_entry_setting_the_flag_before_validate_args_is_no_stop(tmp_path):
    code = DIRECT.replace("{touch}", "args.checkpoint_activations = False")
    run = checkout(tmp_path, BIGCODE, "--checkpoint-activations --batch-size 4", code=code)
    found = said(read_launch(run, megatron_version="0.19.2"))
    assert [(s, "`--batch-size`" in m) for s, m, _ in found] == [("error", True)], found


def test_the_entry_handing_the_args_to_its_own_function_first_is_not_sure(tmp_path):
    for n, touch in enumerate(["_tweak(args)", "args.__dict__.update(overrides)", "setattr(args, name, None)"]):
        run = checkout(tmp_path / str(n), BIGCODE, "--checkpoint-activations", code=DIRECT.replace("{touch}", touch))
        found = said(read_launch(run, megatron_version="0.19.2"))
        assert [s for s, _, _ in found] == ["warning"] and "may change `args`" in found[0][1], (touch, found)
    # 0d7e02bd26 megatron/training/initialize.py:62-65: initialize_megatron(parsed_args=args) validates them
    code = DIRECT.replace("{touch}", "_tweak(args)").replace(
        "from megatron.arguments import parse_args, validate_args",
        "from megatron.arguments import parse_args\nfrom megatron.initialize import initialize_megatron").replace(
        "validate_args(args)", "initialize_megatron(parsed_args=args)")
    run = checkout(tmp_path / "parsed", BIGCODE, "--checkpoint-activations", code=code)
    found = said(read_launch(run, megatron_version="0.19.2"))
    assert [s for s, _, _ in found] == ["warning"] and "may change `args`" in found[0][1], found


def test_the_entry_rewriting_sys_argv_leaves_the_stop_undecided(tmp_path):
    code = ENTRY.replace('if __name__ == "__main__":\n',
                         'if __name__ == "__main__":\n    sys.argv = [a for a in sys.argv if a != "--x"]\n')
    run = checkout(tmp_path, BIGCODE, "--checkpoint-activations", code="import sys\n" + code)
    found = said(read_launch(run, megatron_version="0.19.2"))
    assert [s for s, _, _ in found] == ["warning"] and "rewrites sys.argv" in found[0][1], found


def test_a_call_handed_args_inside_validate_args_may_set_any_unless_read(tmp_path):
    for n, first in enumerate(["_apply_overrides(args)", "args.__dict__.update(_load_overrides())"]):
        run = checkout(tmp_path / str(n), first + "\n" + dedent(BIGCODE), "--checkpoint-activations")
        assert said(read_launch(run, megatron_version="0.19.2")) == [], first
    # read one step, in the same file or imported from the checkout (0d7e02bd26 arguments.py:369
    # `update_use_dist_ckpt(args)`, megatron/training/utils.py:626), it touches another setting only
    run = checkout(tmp_path / "read", "update_use_dist_ckpt(args)\n_local(args)\n" + dedent(BIGCODE),
                   "--checkpoint-activations")
    parser = tmp_path / "read/megatron/arguments.py"
    parser.write_text("from megatron.utils import update_use_dist_ckpt\n" + parser.read_text()
                      + "\ndef _local(args):\n    if args.x:\n        return\n    args.y = 1\n")
    (tmp_path / "read/megatron/utils.py").write_text(
        "def update_use_dist_ckpt(args):\n    args.use_dist_ckpt = args.ckpt_format != 'torch'\n")
    assert [s.dest for s in stops(parser, tmp_path / "read")] == [
        "batch_size", "model_parallel_size", "checkpoint_activations"]
    assert [s for s, _, _ in said(read_launch(run, megatron_version="0.19.2"))] == ["error"]


def test_a_zero_of_an_int_flag_is_surely_false(tmp_path):
    run = checkout(tmp_path / "zero", "assert not args.num_layers\n", "")
    run.write_text(run.read_text().replace("--num-layers 24", "--num-layers 0"))
    assert said(read_launch(run, megatron_version="0.19.2")) == []
    run = checkout(tmp_path / "two", "assert not args.num_layers\n", "")
    assert [s for s, _, _ in said(read_launch(run, megatron_version="0.19.2"))] == ["error"]
