"""`pwd` is where the job is launched from; a flag no read parser vouches for is never CLEAN.

The script below reproduces NVIDIA/Megatron-LM 23.06 (commit 4f8e9ac412eff9cabae31495b9f5f3f02fe5a9d4)
examples/pretrain_gpt3_175B.sh: `DIR=\\`pwd\\``, the flags in a string `options` ending with
`--activations-checkpoint-method uniform` (a flag 23.06's megatron/arguments.py no longer
defines), `run_cmd="python -u ${DIR}/pretrain_gpt.py $@ ${options}"` and
`srun ... sh -c "${run_cmd}"`. The mini checkout's megatron/arguments.py has that release's
`parse_args(extra_args_provider=None, ignore_unknown_args=False)` shape.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from auditor.analysis.undecided import undecided_inputs
from auditor.config.launch import read_launch

ARGUMENTS_2306 = '''
import argparse

def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser = _add_distributed_args(parser)
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    return parser.parse_args()

def _add_distributed_args(parser):
    group = parser.add_argument_group(title='distributed')
    group.add_argument('--tensor-model-parallel-size', type=int, default=1)
    group.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    group.add_argument('--num-layers', type=int, default=None)
    group.add_argument('--recompute-method', type=str, default=None)
    return parser
'''

PRETRAIN = '''
from megatron.training import pretrain
if __name__ == "__main__":
    pretrain(train_valid_test_datasets_provider, model_provider, forward_step,
             args_defaults={'tokenizer_type': 'GPT2BPETokenizer'})
'''

SCRIPT = '''#!/bin/bash
#SBATCH <SLURM OPTIONS> --nodes=2 --exclusive --ntasks-per-node=8
DIR=`pwd`
mkdir -p $DIR/logs
options=" \\
	--tensor-model-parallel-size 8 \\
	--pipeline-model-parallel-size 2 \\
        --num-layers 96 \\
	--activations-checkpoint-method uniform "
run_cmd="python -u ${DIR}/pretrain_gpt.py $@ ${options}"
srun -l \\
     --container-image "nvcr.io/nvidia/pytorch:20.12-py3" \\
     --output=$DIR/logs/%x_%j.log sh -c "${run_cmd}"
'''


def checkout(root: Path) -> Path:
    """A 23.06-like checkout at `root`; its examples/pretrain_gpt3.sh."""
    for name, text in {"pretrain_gpt.py": PRETRAIN, "megatron/arguments.py": ARGUMENTS_2306}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(dedent(text))
    script = root / "examples" / "pretrain_gpt3.sh"
    script.parent.mkdir(exist_ok=True)
    script.write_text(SCRIPT)
    return script


def test_pwd_is_the_directory_the_scan_runs_in_and_finds_the_checkout(tmp_path, monkeypatch):
    script = checkout(tmp_path)
    monkeypatch.chdir(tmp_path)  # where the job is launched from, as its authors do
    config = read_launch(script)
    assert config.script == f"{tmp_path}/pretrain_gpt.py"
    said = [d for d in config.diagnostics if d.kind == "launch.cwd"]
    assert said and str(tmp_path) in said[0].message and said[0].where.endswith(":3")
    errors = [d for d in config.diagnostics if d.kind == "launch.megatron-spelling"]
    assert [d.severity for d in errors] == ["error"]
    assert "--activations-checkpoint-method" in errors[0].message and str(tmp_path) in errors[0].message


def test_after_cd_pwd_is_not_known(tmp_path, monkeypatch):
    script = checkout(tmp_path)
    script.write_text(SCRIPT.replace("DIR=`pwd`", "cd /somewhere/else\nDIR=$(pwd)"))
    monkeypatch.chdir(tmp_path)
    config = read_launch(script)
    assert not isinstance(config.script, str)
    assert not [d for d in config.diagnostics if d.kind == "launch.cwd"]


@pytest.mark.parametrize("cwd", ["elsewhere", "unknown"])
def test_an_unknown_flag_with_no_parser_found_leaves_the_run_undecided(tmp_path, monkeypatch, cwd):
    script = checkout(tmp_path / "checkout")
    if cwd == "unknown":  # the entry's path is not known statically
        script.write_text(SCRIPT.replace("DIR=`pwd`", "DIR=$(dirname $(readlink -f $0))"))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # no pretrain_gpt.py here: no parser is found
    config = read_launch(script)
    unread = [d for d in config.diagnostics if d.kind == "launch.front-end-unread"]
    assert len(unread) == 1 and "--activations-checkpoint-method" in unread[0].message
    assert "--tensor-model-parallel-size" not in unread[0].message  # one the rules know
    doc = {"findings": [d.to_json() for d in config.diagnostics], "config": {}, "sites": []}
    undecided = undecided_inputs(doc)
    assert any("--activations-checkpoint-method" in u.what and u.decide.startswith("--command")
               for u in undecided)


def test_a_flag_the_parser_rejects_is_a_run_that_does_not_start(tmp_path, monkeypatch):
    """argparse exits before the schedule: the headline says the run does not start, ahead of
    anything the schedule would do (a DETAIL contradiction included)."""
    from auditor.analysis.verdict import judge

    script = checkout(tmp_path)
    script.write_text(SCRIPT.replace("#SBATCH", "export TORCH_DISTRIBUTED_DEBUG=DETAIL\n#SBATCH"))
    monkeypatch.chdir(tmp_path)
    config = read_launch(script)
    doc = {"findings": [d.to_json() for d in config.diagnostics], "config": {},
           "sites": [{"reachable": "no", "verdict": "unreachable"}]}
    head = judge(doc).headline
    assert head.startswith("DOES NOT START:") and "--activations-checkpoint-method" in head
