"""auditor.config.frontends.reader's label_front_end: a front end the rules know by its flags
(rules/deepspeed.toml [[front_end]]: microsoft/Megatron-DeepSpeed@f4157bea69 pretrain_gpt.py:51,
`if args.deepspeed and not args.no_pipeline_parallel:`) runs on another stack than its
launcher's; DeepSpeed-Chat's main.py passes --deepspeed too, with no Megatron layout flag."""

from __future__ import annotations

import pytest

from auditor.bash.values import Field
from auditor.config.flags import read_flags
from auditor.config.frontends.reader import label_front_end
from auditor.config.model import LaunchConfig
from auditor.rulebook.launchers import Spelling


def launch(script: str, *words: str) -> LaunchConfig:
    config = LaunchConfig("run.sh", f"deepspeed {script}", 7, script=script)
    read_flags(config, [Field(w, 7) for w in words], Spelling.load(None), "run.sh", False)
    label_front_end(config, Spelling.load(None), "run.sh")
    return config


def test_megatron_deepspeed_with_deepspeed_and_a_layout_flag_is_labelled():
    config = launch("pretrain_gpt.py", "--pipeline-model-parallel-size", "2", "--deepspeed",
                    "--deepspeed_config", "ds_config.json")
    assert config.launcher == "megatron-deepspeed pretrain_gpt.py"
    [note] = config.diagnostics
    assert (note.kind, note.severity, note.where) == ("launch.front-end", "info", "run.sh:7")
    assert note.detail == {"front_end": "Megatron-DeepSpeed", "launched": "deepspeed pretrain_gpt.py"}
    assert note.message.endswith("(rules: Megatron-DeepSpeed)")


@pytest.mark.parametrize("script, words", [
    ("main.py", ("--deepspeed", "--zero_stage", "3")),  # DeepSpeed-Chat: not Megatron's script
    ("pretrain_gpt.py", ("--deepspeed",)),  # no layout flag
    ("pretrain_gpt.py", ("--pipeline-model-parallel-size", "2")),  # Megatron-LM without DeepSpeed
])
def test_otherwise_the_launcher_stays(script, words):
    config = launch(script, *words)
    assert config.launcher == f"deepspeed {script}" and config.diagnostics == []
