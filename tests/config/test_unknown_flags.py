"""A flag the front end's parser does not define, judged from the parser read
(config/flags.py not_in_parser, check_front_end): the run does not start where that parser
surely rejects it, else the setting it may have meant is unknown, never its default.

The mini checkouts reproduce microsoft/Megatron-DeepSpeed@f4157bea69: megatron/arguments.py:23-24
`argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)`, :54 `parser =
deepspeed.add_config_arguments(parser)`, :57-60 `parse_known_args()` under ignore_unknown_args else
`parse_args()`; pretrain_gpt.py calling `pretrain(...)`; examples_deepspeed/rebase/
ds_pretrain_gpt_125M.sh:296-331 `deepspeed_options="... --pipeline-model-parallel-size ${pp_size}"`
then `deepspeed ${dir}/../../pretrain_gpt.py ${megatron_options} ... ${deepspeed_options}`, here
with the flag misspelt (`--pipline-model-parallel-size`): before, read as written, PP 1, CLEAN.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch
from auditor.config.model import LaunchConfig

ARGUMENTS = '''
import argparse
import deepspeed

def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=ABBREV)
    parser = _add_distributed_args(parser)
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    parser = deepspeed.add_config_arguments(parser)
    PARSE
    return args

def _add_distributed_args(parser):
    group = parser.add_argument_group(title='distributed')
    group.add_argument('--tensor-model-parallel-size', type=int, default=1)
    group.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    group.add_argument('--pipeline-model-parallel-split-rank', type=int, default=None)
    group.add_argument('--no-pipeline-parallel', action='store_true')
    return parser
'''
BOTH = '''if ignore_unknown_args:
        args, _ = parser.parse_known_args()
    else:
        args = parser.parse_args()'''

PRETRAIN = '''
from megatron.training import pretrain
if __name__ == "__main__":
    pretrain(train_valid_test_datasets_provider, model_provider, forward_step, EXTRA)
'''

LAUNCH = '''#!/bin/bash
pp_size=2
deepspeed_options=" \\
    --deepspeed \\
    --tensor-model-parallel-size 1 \\
    FLAG ${pp_size}"
deepspeed --num_gpus 2 ${dir}/../../pretrain_gpt.py ${deepspeed_options} MORE
'''


def launch(tmp_path: Path, flag: str, abbrev: str = "False", parse: str = BOTH, extra: str = "",
           more: str = "") -> LaunchConfig:
    (tmp_path / "megatron").mkdir()
    (tmp_path / "megatron" / "arguments.py").write_text(
        ARGUMENTS.replace("ABBREV", abbrev).replace("PARSE", parse))
    (tmp_path / "pretrain_gpt.py").write_text(PRETRAIN.replace("EXTRA", extra))
    folder = tmp_path / "examples_deepspeed" / "rebase"
    folder.mkdir(parents=True)
    script = folder / "ds_pretrain_gpt_125M.sh"
    script.write_text(dedent(LAUNCH).replace("FLAG", flag).replace("MORE", more)
                      .replace("${dir}", str(folder)))
    return parse_launch(script.read_text(), str(script))


def spelling(config: LaunchConfig) -> list[tuple[str, str]]:
    return [(d.severity, d.message) for d in config.diagnostics if d.kind == "launch.megatron-spelling"]


def test_a_misspelt_flag_the_parser_rejects_does_not_start(tmp_path):
    config = launch(tmp_path, "--pipline-model-parallel-size")
    [said] = [d for d in config.diagnostics if d.kind == "launch.megatron-spelling"]
    assert said.severity == "error" and said.detail["category"] == "config"
    assert said.detail["flag"] == "--pipline-model-parallel-size"
    assert said.detail["closest"] == "--pipeline-model-parallel-size"
    assert said.where.rsplit(":", 1)[0].endswith("ds_pretrain_gpt_125M.sh")
    assert "argparse rejects it" in said.message


def test_the_right_spelling_is_read_as_before(tmp_path):
    config = launch(tmp_path, "--pipeline-model-parallel-size")
    assert spelling(config) == [] and config.flags["pipeline_model_parallel_size"].value == "2"


def test_a_parser_taking_unknown_flags_rejects_none(tmp_path):
    """A fork parsing with parse_known_args only: the misspelt flag is left over, not rejected,
    and read by nothing: the run starts at the parser's default pipeline size, as it runs."""
    config = launch(tmp_path, "--pipline-model-parallel-size", parse="args, _ = parser.parse_known_args()")
    [(severity, message)] = spelling(config)
    assert severity == "warning" and "nothing reads it" in message
    assert "pipeline_model_parallel_size" not in config.flags


def test_a_unique_prefix_is_its_flag_where_the_parser_takes_abbreviations(tmp_path):
    config = launch(tmp_path, "--pipeline-model-parallel-si", abbrev="True")
    assert spelling(config) == []
    assert config.flags["pipeline_model_parallel_size"].value == "2"
    (tmp_path / "strict").mkdir()
    refused = launch(tmp_path / "strict", "--pipeline-model-parallel-si")  # allow_abbrev=False
    assert [s for s, _ in spelling(refused)] == ["error"]


def test_an_ambiguous_prefix_leaves_the_setting_unknown(tmp_path):
    config = launch(tmp_path, "--pipeline-model-parallel", abbrev="True")
    [(severity, message)] = spelling(config)
    assert severity == "warning" and "abbreviates several flags" in message
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_a_flag_an_unread_provider_may_define_is_no_error(tmp_path):
    """`extra_args_provider=` a function imported from elsewhere (not read): it may define the
    flag, so no DOES NOT START; a near miss of the pipeline size leaves it unknown."""
    config = launch(tmp_path, "--pipline-model-parallel-size",
                    extra="extra_args_provider=add_extra_args")
    [(severity, message)] = spelling(config)
    assert severity == "warning" and "is not read" in message
    assert config.flags["pipeline_model_parallel_size"].value != "1"


def test_a_flag_inside_an_unknown_variable_is_not_judged(tmp_path):
    """`${EXTRA_ARGS}` never assigned may hold any flag: none of its words is judged."""
    config = launch(tmp_path, "--pipeline-model-parallel-size", more="${EXTRA_ARGS}")
    assert spelling(config) == []
