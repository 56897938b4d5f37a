"""transformers' Trainer whose TrainingArguments HfArgumentParser reads from the launch line's
`--deepspeed FILE` (rules/deepspeed.toml [trainer_engine] `parsers`): DeepSpeed's data-parallel
engine, not the megatron-core reading a torch launcher's entry gets as a guess.

The entry reproduces microsoft/DeepSpeedExamples@83757d9c93 training/MoQ/run_glue.py:189-195
(`HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))`, the
one-JSON-argument form under `if len(sys.argv) == 2 and sys.argv[1].endswith(".json")`, else
`parse_args_into_dataclasses()`; `Trainer(..., args=training_args)`), launched by its
training/MoQ/run.sh:26-40 (`python -m torch.distributed.launch --nproc_per_node 1 run_glue.py
... --deepspeed test.json`).
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from auditor import rulebook, sources
from auditor.config import deepspeed_engine
from auditor.config.launch import read_launch

GLUE = '''
import os
import sys
from dataclasses import dataclass, field

from transformers import AutoModelForSequenceClassification, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="bert-base-cased")


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, training_args = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    else:
        model_args, training_args = parser.parse_args_into_dataclasses()
    {extra}
    model = AutoModelForSequenceClassification.from_pretrained(model_args.model_name_or_path)
    trainer = Trainer(model=model, args=training_args)
    trainer.train()


if __name__ == "__main__":
    main()
'''
LAUNCH = "python -m torch.distributed.launch --nproc_per_node 1 run_glue.py"


def _diagnostics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, words: str, extra: str = "",
                 text: str = GLUE, before: str = "", launcher: str = LAUNCH) -> list:
    (tmp_path / "run_glue.py").write_text(dedent(text).replace("{extra}", extra))
    (tmp_path / "test.json").write_text('{"train_batch_size": 32, "fp16": {"enabled": true}}')
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{before}\n{launcher} {words}\n")
    monkeypatch.chdir(tmp_path)
    deepspeed_engine.engine_of.cache_clear()
    return read_launch("run.sh").diagnostics


def test_the_launch_lines_deepspeed_config_makes_the_trainer_zero(tmp_path, monkeypatch):
    """CLEAN before, judged on megatron-core's schedules (0 sites, megatron-core releases named)."""
    diagnostics = _diagnostics(tmp_path, monkeypatch, "--do_train --fp16 --output_dir out --deepspeed test.json")
    (said,) = [d for d in diagnostics if d.kind == "launch.not-pipeline"]
    assert "DeepSpeed's data-parallel engine (ZeRO)" in said.message
    assert ("run_glue.py:19 parses TrainingArguments with HfArgumentParser from the launch line, whose "
            "--deepspeed test.json (run.sh:3) hands transformers' Trainer a DeepSpeed config") in said.message


def test_the_deepspeed_launcher_reads_it_too(tmp_path, monkeypatch):
    diagnostics = _diagnostics(tmp_path, monkeypatch, "--output_dir out --deepspeed test.json",
                               launcher="deepspeed --num_gpus 2 run_glue.py")
    (said,) = [d for d in diagnostics if d.kind == "launch.not-pipeline"]
    assert "DeepSpeed's data-parallel engine (ZeRO)" in said.message


@pytest.mark.parametrize("words,extra,text", [
    ("--output_dir out", "", GLUE),  # no --deepspeed: accelerate may take its Megatron-LM branch
    ("--output_dir out --deepspeed ''", "", GLUE),  # empty: no DeepSpeed
    ("--output_dir out --deepspeed test.json $EXTRA", "", GLUE),  # a word not known may override it
    ("--deepspeed=test.json", "", GLUE),  # one argument: the one-JSON form is not excluded
    ("args.json", "", GLUE),  # the one-JSON form: a --deepspeed only in that file is not read here
    ("--output_dir out --deepspeed test.json", "training_args.deepspeed = None", GLUE),
    ("--output_dir out --deepspeed test.json", "sys.argv.append('--deepspeed=')", GLUE),
    ("--output_dir out --deepspeed test.json", "",  # sys.argv handed to a function that deletes from it
     GLUE.replace("def main():", "def strip(a):\n    i = a.index('--deepspeed')\n    del a[i:i + 2]\n\n\ndef main():")
     .replace("    main()", "    strip(sys.argv)\n    main()")),
    ("--output_dir out --deepspeed test.json --deeps ''", "", GLUE),  # argparse's abbreviation, the last wins
    ("--output_dir out --deepspeed test.json", "",  # the JSON form not behind `len(sys.argv) == 2`
     GLUE.replace("if len(sys.argv) == 2 and", "if")),
    ("--output_dir out --deepspeed test.json", "",  # arguments of its own, not sys.argv's
     GLUE.replace("parse_args_into_dataclasses()", "parse_args_into_dataclasses(args=['--output_dir', 'o'])")),
    ("--output_dir out --deepspeed test.json", "",  # the unpacking's places do not match the classes
     GLUE.replace("(ModelArguments, TrainingArguments)", "(TrainingArguments, ModelArguments)")),
])
def test_a_config_the_launch_line_may_not_hand_the_trainer_stays_as_before(tmp_path, monkeypatch, words,
                                                                           extra, text):
    """False NOT A PIPELINE RUN otherwise: each leaves the Trainer's config not known here."""
    diagnostics = _diagnostics(tmp_path, monkeypatch, words, extra, text)
    assert not [d for d in diagnostics if d.kind == "launch.not-pipeline"]


def test_reading_sys_argv_changes_nothing(tmp_path, monkeypatch):
    """len(), an index, a slice, iteration and `in` only read what the parser reads."""
    extra = "print(len(sys.argv), sys.argv[1:], [a for a in sys.argv], '--debug' in sys.argv)"
    diagnostics = _diagnostics(tmp_path, monkeypatch, "--output_dir out --deepspeed test.json --do_train", extra)
    assert [d for d in diagnostics if d.kind == "launch.not-pipeline"]


def test_accelerates_own_environment_still_keeps_it_undecided(tmp_path, monkeypatch):
    diagnostics = _diagnostics(tmp_path, monkeypatch, "--output_dir out --deepspeed test.json",
                               before="export ACCELERATE_USE_MEGATRON_LM=true")
    assert not [d for d in diagnostics if d.kind == "launch.not-pipeline"]
    assert [d for d in diagnostics if d.kind == "launch.unknown-stack"]


@pytest.mark.wheels
@pytest.mark.network
def test_the_parser_reading_is_each_checked_releases():
    """[trainer_engine] `code` and `parse_code`, and `parse` and `dead_forms` as HfArgumentParser's
    methods, in each `checked` release of transformers."""
    rule = rulebook.load("deepspeed").data["trainer_engine"]
    for version in rule["checked"]:
        root = sources.resolve(f"transformers=={version}").root
        parser = (root / "transformers/hf_argparser.py").read_text()
        assert rule["parse_code"] in parser, version
        for method in [rule["parse"], *rule["dead_forms"]]:
            assert f"    def {method}(" in parser, (version, method)
        assert f"if self.{rule['keyword']}:" in (root / "transformers/training_args.py").read_text(), version
        assert rule["code"] in (root / "transformers/training_args.py").read_text(), version


@pytest.mark.parametrize("words,named,before", [
    ("--output_dir out --deepspeed $DS_CFG", "--deepspeed $DS_CFG (run.sh:3)", ""),  # the caller's value
    ('--output_dir out --deepspeed "$DS_CFG"', "--deepspeed $DS_CFG (run.sh:3)", ""),  # "" runs no DeepSpeed
    ("--output_dir out --deepspeed test.json $EXTRA", "$EXTRA (run.sh:3), a word not known after --deepspeed", ""),
    ("--output_dir out $A", "--deepspeed ${A} (run.sh:2), given only on a branch not decided",
     'if [ "$DS" = 1 ]; then A="--deepspeed test.json"; fi'),
    # one word `--deepspeed=VALUE`, as MoQ's run.sh:40 writes it (review r48-conv 3: moq_eq, e1-e3)
    ("--output_dir out --deepspeed=$DS_CFG", "--deepspeed $DS_CFG (run.sh:3)", ""),
    ('--output_dir out --deepspeed="$DS_CFG"', "--deepspeed $DS_CFG (run.sh:3)", ""),
    ("--output_dir out --deepspeed=${DS_CFG}", "--deepspeed ${DS_CFG} (run.sh:3)", ""),
    # a prefix argparse takes for it (review r48-conv 4: d20_abbrev)
    ("--output_dir out --deepspeed test.json --deeps $X",
     "--deeps $X (run.sh:3), which argparse may read as --deepspeed", ""),
])
def test_a_deepspeed_value_not_known_is_inconclusive_naming_it(tmp_path, monkeypatch, words, named, before):
    """run.sh:40 of DeepSpeedExamples@83757d9c93 training/MoQ with its `test.json` given as a value
    not known here. CLEAN before, judged on megatron-core's schedules at PP 1 (a framework the run
    does not use): a non-empty value is DeepSpeed's data-parallel engine (transformers 4.46.3
    training_args.py:2038 `if self.deepspeed:`; DeepSpeed 0.16.0 deepspeed/__init__.py:178 builds
    a PipelineEngine only for a PipelineModule), an empty one no DeepSpeed at all (accelerate's
    choice), so the value decides."""
    diagnostics = _diagnostics(tmp_path, monkeypatch, words, before=before)
    assert not [d for d in diagnostics if d.kind == "launch.not-pipeline"]
    (said,) = [d for d in diagnostics if d.kind == "launch.unknown-stack"]
    assert f"run_glue.py:19 parses TrainingArguments with HfArgumentParser from the launch line, whose " \
           f"--deepspeed value is not known here ({named})" in said.message
    assert "an empty one runs no DeepSpeed" in said.message
    assert said.detail["undecided"] == f"the --deepspeed value the Trainer gets ({named})"
    assert said.detail["decide"].startswith("the value the run gives it, set in run.sh or as --command")


@pytest.mark.parametrize("words,extra", [
    ("--output_dir out --deepspeed ''", ""),  # known empty: no DeepSpeed, the reading of a plain Trainer
    ("--output_dir out $EXTRA", ""),  # no --deepspeed written
    ("--output_dir out --deepspeed $DS_CFG", "training_args.deepspeed = None"),  # the field rewritten
])
def test_a_trainer_the_value_would_not_decide_keeps_its_reading(tmp_path, monkeypatch, words, extra):
    """What a Trainer without a DeepSpeed config reads (another reader's), not the value's question."""
    diagnostics = _diagnostics(tmp_path, monkeypatch, words, extra)
    assert not [d for d in diagnostics if d.kind == "launch.not-pipeline" or "value is not known here" in d.message]


def test_an_unknown_value_beside_accelerates_environment_names_the_environment(tmp_path, monkeypatch):
    diagnostics = _diagnostics(tmp_path, monkeypatch, "--output_dir out --deepspeed $DS_CFG",
                               before="export ACCELERATE_USE_MEGATRON_LM=true")
    (said,) = [d for d in diagnostics if d.kind == "launch.unknown-stack"]
    assert "ACCELERATE_USE_MEGATRON_LM" in said.message
