"""A training command chosen by a value the script does not know (issue 22 item 4): one of
several strings picked by an if/case over `$1`, then run with `eval "$cmd"` or `$cmd`.

Shape from microsoft/Megatron-DeepSpeed, commit f4157bea69f3df8c6cb66f2ebcda66ba03d1288e,
examples_deepspeed/finetune_hf_llama/finetune_llama.sh: `if [ "$1" = "convert_hf2mds" ]; then
task_args="$covert_hf2mds_args" elif ... else task_args="$finetune_args" fi`, then
`full_cmd="$task_args $comm_args"` and `eval "$full_cmd"`; an earlier if over the same tests picks
DS_CONFIG_PATH. Each branch's command is one the script may run: each is judged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from auditor.bash.choices import if_choice
from auditor.bash.lexer import Lexer
from auditor.bash.parser import Branches, ShellParser
from auditor.config.chosen_command import KIND, MAX_WALKS
from auditor.config.launch import CommandNotFollowed, parse_launch

SCRIPT = """PP=2
if [ "$1" = "convert_hf2mds" ]; then
    DS_CONFIG_PATH=empty.json
else
    DS_CONFIG_PATH=ds_config.json
fi
convert_args="deepspeed tools/hf2megads_weight_converter.py --load-mode auto"
finetune_args="deepspeed finetune_llama.py --load ckpt"
comm_args="--pipeline-model-parallel-size $PP --deepspeed_config $DS_CONFIG_PATH --num-layers 8"
if [ "$1" = "convert_hf2mds" ]; then
    task_args="$convert_args"
else
    task_args="$finetune_args"
fi
full_cmd="$task_args $comm_args"
RUN
"""


@pytest.mark.parametrize("run", ['eval "$full_cmd"', "$full_cmd"])
def test_each_command_the_positional_chooses_is_read(run: str) -> None:
    text = SCRIPT.replace("RUN", run)
    first = parse_launch(text, "ft.sh")
    second = parse_launch(text, "ft.sh", which=1)
    assert first.commands == second.commands == 2
    assert {first.launcher, second.launcher} == {"deepspeed hf2megads_weight_converter.py",
                                                 "deepspeed finetune_llama.py"}
    configs = {c.launcher: c.flags["deepspeed_config"].value for c in (first, second)}
    # the two ifs test the same value: the finetune command gets the else branch's config
    assert configs["deepspeed finetune_llama.py"] == "ds_config.json"
    assert configs["deepspeed hf2megads_weight_converter.py"] == "empty.json"
    chosen = [d for d in first.diagnostics if d.kind == KIND]
    assert chosen and '"$1"' in chosen[0].message


def test_a_branch_whose_command_is_unknown_keeps_it_unfollowed() -> None:
    text = SCRIPT.replace('task_args="$convert_args"', 'task_args="$CONVERTER"').replace("RUN", 'eval "$full_cmd"')
    with pytest.raises(CommandNotFollowed):
        parse_launch(text, "ft.sh")


def test_a_command_not_chosen_by_a_branch_is_not_guessed() -> None:
    """`$1` itself run: no branch's string, nothing to follow."""
    with pytest.raises(CommandNotFollowed):
        parse_launch(SCRIPT.replace("RUN", 'eval "$1 $comm_args"'), "ft.sh")


CASE = """case "$MODE" in
  sft) CMD="torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 2 --num-layers 8" ;;
  pt) CMD="torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4 --num-layers 8" ;;
  *) echo "usage: MODE=sft|pt"; exit 1 ;;
esac
$CMD
"""


def test_a_case_over_an_unset_variable_gives_one_command_per_branch() -> None:
    """The `*)` branch exits before any command: the other two are the script's commands."""
    sizes = sorted(parse_launch(CASE, "c.sh", which=k).flags["pipeline_model_parallel_size"].value
                   for k in range(2))
    assert sizes == ["2", "4"]


IF_CHAIN = """if [ "$MODE" = sft ]; then
  CMD="torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 2 --num-layers 8"
elif [ "$MODE" = pt ]; then
  CMD="torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4 --num-layers 8"
else
  echo "usage: MODE=sft|pt"; exit 1
fi
$CMD
"""


def test_an_if_chain_over_an_unset_variable_gives_one_command_per_branch() -> None:
    """The case above spelt as tests of a bare `$MODE` (turn 24's integrated branch read a bare
    unset variable in a test as empty, took the usage `exit 1` and followed no command)."""
    sizes = sorted(parse_launch(IF_CHAIN, "c.sh", which=k).flags["pipeline_model_parallel_size"].value
                   for k in range(2))
    assert sizes == ["2", "4"]


# --- the scan judges each command, naming what chooses it ---------------------------------------

SCAN = """#!/bin/bash
export TORCH_DISTRIBUTED_DEBUG=DETAIL
if [ "$1" = "small" ]; then
  PP=1
else
  PP=2
fi
if [ "$1" = "small" ]; then
  cmd="torchrun --nproc_per_node=8 pretrain_gpt.py --num-layers 8 --pipeline-model-parallel-size $PP"
else
  cmd="torchrun --nproc_per_node=8 pretrain_gpt.py --num-layers 16 --pipeline-model-parallel-size $PP"
fi
eval "$cmd"
"""


def _scan(tmp_path: Path, *args: str) -> dict:
    script = tmp_path / "run.sh"
    script.write_text(SCAN)
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json",
                           "--target", "megatron-core==0.17.0", *args],
                          capture_output=True, text=True, timeout=300, check=False)
    return json.loads(done.stdout)


@pytest.mark.wheels
def test_the_verdict_covers_every_chosen_command(tmp_path: Path) -> None:
    doc = _scan(tmp_path, "--torch", "2.10.0")
    assert doc["verdict"]["status"] == "findings", doc["verdict"]["headline"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2
    several = [f for f in doc["findings"] if f["kind"] == "launch.several-commands"]
    assert several and "one of 2" in several[0]["message"] and "$1" in several[0]["message"]
    assert "line 8" in doc["config"]["command_basis"]["chosen_by"]  # the if that sets `cmd`
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs/schema/scan-document.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)


def test_tests_written_alike_are_one_choice() -> None:
    """The two ifs of finetune_llama.sh (lines 46 and 118) choose alike; another test does not."""
    nodes = ShellParser(Lexer(SCRIPT.replace("RUN", ""), "ft.sh").tokens(), "ft.sh", []).parse()
    ifs = [n for n in nodes if isinstance(n, Branches)]
    first, second = (if_choice(b, 0) for b in ifs)
    assert first is not None and second is not None
    assert first.key == second.key and first.options == second.options == 2 and first.line != second.line
    other = ShellParser(Lexer('if [ "$2" = x ]; then A=1; fi\n', "o.sh").tokens(), "o.sh", []).parse()[0]
    assert isinstance(other, Branches)
    chosen = if_choice(other, 0)
    assert chosen is not None and chosen.key != first.key and chosen.options == 2  # the branch, or none


def test_too_many_ways_leave_the_command_unfollowed() -> None:
    """Each if over another unknown doubles the ways the command can go: past MAX_WALKS none is
    walked, and the command stays not followed; within it, the ways that name a launcher
    (`torchrun`) are the commands, those of a program that trains nothing (`echo`) none. (A way
    of a program no rule names may train: LaunchShell.may_train, and the command is not followed.)"""
    pieces = [("/usr/bin/", "echo "), ("a/", "b/"), ("c/", "d/"), ("e/", "f/")]

    def script(count: int) -> str:
        parts = "".join(f'if [ "${k + 1}" = a ]; then P{k}="{yes}"; else P{k}="{no}"; fi\n'
                        for k, (yes, no) in enumerate(pieces[:count]))
        name = "".join(f"${{P{k}}}" for k in range(count)) + "torchrun"
        return parts + f'eval "{name} pretrain_gpt.py --pipeline-model-parallel-size 2"\n'

    assert 2 ** 3 <= MAX_WALKS < 2 ** 4
    assert parse_launch(script(3), "m.sh").launcher == "torchrun pretrain_gpt.py"
    with pytest.raises(CommandNotFollowed):
        parse_launch(script(4), "m.sh")


def test_a_test_of_a_functions_argument_is_decided_by_each_call() -> None:
    """Inside a function `$1` is the call's argument (bash(1) FUNCTIONS): each call walks its own
    branch, and a call whose argument is the caller's own unknown `$1` is no choice of the script."""
    body = ('pick() {\n  if [ "$1" = convert ]; then CMD="deepspeed tools/convert.py"; '
            'else CMD="deepspeed finetune_llama.py"; fi\n  eval "$CMD --pipeline-model-parallel-size 2"\n}\n')
    one = parse_launch(body + "pick convert\n", "f.sh")
    assert one.commands == 1 and one.script == "tools/convert.py"
    assert parse_launch(body + "pick convert\npick train\n", "f.sh", which=1).script == "finetune_llama.py"
    with pytest.raises(CommandNotFollowed):
        parse_launch(body + 'pick "$1"\n', "f.sh")
