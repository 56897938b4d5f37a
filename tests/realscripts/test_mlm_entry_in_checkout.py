"""An absolute training script of the authors' cluster, read from the checkout the launch script
sits in (issue 22 items 4, 6, 10).

The launch reproduces bigcode-project/Megatron-LM (commit 7c325cd34a109880a3fc03432e8b3e4576b22701)
examples/finetune_starcoderplus.slurm: `SCRIPT_REPO=/fsx/leandro/git/Megatron-LM-BC`, `pushd
$SCRIPT_REPO`, the flags in a string GPT_ARGS (with `--attention-head-type multiquery`, a flag
only the fork's own megatron/arguments.py defines), `CMD=" $SCRIPT_REPO/pretrain_gpt.py $GPT_ARGS
..."`, `LAUNCHER="python -u -m torch.distributed.run ..."` and `srun $SRUN_ARGS --jobid
$SLURM_JOB_ID bash -c "$LAUNCHER --node_rank \\$SLURM_PROCID ... $CMD" 2>&1 | tee $LOG_PATH`.
The mini checkout has that fork's layout: megatron/arguments.py (`parse_args(extra_args_provider=None,
ignore_unknown_args=False)`, its `_add_network_size_args` with --attention-head-type),
megatron/core/package_info.py (0.1.0), pretrain_gpt.py at the root and setup.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from auditor.config.launch import read_launch
from auditor.config.pyenv import locate
from auditor.report.text import scan_report
from auditor.scan import ScanInputs, run_scan
from tests.report.test_schema import VALIDATOR

ARGUMENTS = '''
import argparse

def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser = _add_network_size_args(parser)
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    return parser.parse_args()

def _add_network_size_args(parser):
    group = parser.add_argument_group(title='network size')
    group.add_argument('--num-layers', type=int, default=None)
    group.add_argument('--attention-head-type', type=str, default=None,
                       choices=['multihead', 'multiquery'])
    group.add_argument('--tensor-model-parallel-size', type=int, default=1)
    group.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    group.add_argument('--micro-batch-size', type=int, default=None)
    group.add_argument('--global-batch-size', type=int, default=None)
    return parser
'''

PRETRAIN_GPT = '''
from megatron.training import pretrain

if __name__ == "__main__":
    pretrain(None, None, None, args_defaults={'tokenizer_type': 'GPT2BPETokenizer'})
'''

SLURM = '''#!/bin/bash
#SBATCH --job-name=starcoderplus
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
set -x -e
SCRIPT_REPO=/fsx/leandro/git/Megatron-LM-BC
pushd $SCRIPT_REPO
LOG_PATH=$SCRIPT_REPO/main_log.txt
GPUS_PER_NODE=8
MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
MASTER_PORT=6000
NNODES=$SLURM_NNODES
GPT_ARGS="\\
        --tensor-model-parallel-size 4 \\
       --pipeline-model-parallel-size PP \\
       --num-layers 40 \\
       --attention-head-type multiquery \\
       --micro-batch-size 1 \\
       --global-batch-size 512 \\
"
CMD=" \\
    $SCRIPT_REPO/ENTRY \\
    $GPT_ARGS \\
    "
export LAUNCHER="python -u -m torch.distributed.run \\
    --nproc_per_node $GPUS_PER_NODE \\
    --nnodes $NNODES \\
    --rdzv_endpoint $MASTER_ADDR:$MASTER_PORT \\
    --rdzv_backend c10d \\
    --max_restarts 0 \\
    --tee 3 \\
    "
SRUN_ARGS=" \\
    --wait=60 \\
    --kill-on-bad-exit=1 \\
    "
clear; srun $SRUN_ARGS --jobid $SLURM_JOB_ID bash -c "$LAUNCHER --node_rank \\$SLURM_PROCID --role \\$SLURMD_NODENAME: $CMD" 2>&1 | tee $LOG_PATH
'''


def fork(tmp_path: Path, pp: int = 4, entry: str = "pretrain_gpt.py", marker: str = "setup.py") -> Path:
    files = {
        "megatron/arguments.py": ARGUMENTS,
        "megatron/core/package_info.py": "MAJOR = 0\nMINOR = 1\nPATCH = 0\nPRE_RELEASE = ''\n",
        "pretrain_gpt.py": PRETRAIN_GPT,
        "examples/finetune_starcoderplus.slurm": SLURM.replace("PP", str(pp)).replace("ENTRY", entry),
    }
    if marker:
        files[marker] = "from setuptools import setup\nsetup()\n"
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / "examples/finetune_starcoderplus.slurm"


def kinds(launch) -> set[str]:
    return {f.kind for f in launch.diagnostics}


def test_the_entry_at_the_same_tail_path_in_the_checkout_is_read(tmp_path):
    launch = read_launch(fork(tmp_path))
    assert launch.script == "/fsx/leandro/git/Megatron-LM-BC/pretrain_gpt.py"
    assert launch.script_read == str(tmp_path.resolve() / "pretrain_gpt.py")
    assert launch.checkouts["megatron-lm"] == tmp_path.resolve()  # the fork's parser was read
    said = next(f for f in launch.diagnostics if f.kind == "launch.entry-in-checkout")
    assert "/fsx/leandro/git/Megatron-LM-BC/pretrain_gpt.py" in said.message and "read in its place" in said.message
    # --attention-head-type is in the fork's megatron/arguments.py: nothing unread, nothing rejected
    assert "launch.front-end-unread" not in kinds(launch)
    assert not [f for f in launch.diagnostics if f.kind == "launch.megatron-spelling"]
    assert launch.flags["pipeline_model_parallel_size"].value == "4"
    assert locate(launch)[0].path == launch.script_read  # the entry's own Python is read too
    # the fork says megatron-core 0.1.0, which no rule covers: the releases judged stand in, said
    uncovered = next(f for f in launch.diagnostics if f.kind == "launch.checkout-uncovered")
    assert "0.1.0" in uncovered.message and "megatron/core/package_info.py" in uncovered.message
    assert "megatron-core" not in launch.pins


def test_a_tail_that_differs_is_not_read_in_its_place(tmp_path):
    launch = read_launch(fork(tmp_path, entry="pretrain_gpt_fim.py"))
    assert launch.script_read == ""
    assert "launch.front-end-unread" in kinds(launch)


def test_no_checkout_around_the_launch_script_reads_nothing_in_its_place(tmp_path):
    launch = read_launch(fork(tmp_path, marker=""))
    assert launch.script_read == "" and "launch.front-end-unread" in kinds(launch)


def test_the_header_names_the_file_read(tmp_path):
    doc = run_scan(ScanInputs(str(fork(tmp_path, pp=1)), targets=["megatron-core==0.17.0"],
                   torch_version="2.11.0", jobs=1))
    assert "launch.checkout-uncovered" not in {f["kind"] for f in doc["findings"]}  # --target says it
    assert doc["launch"]["entry_read"] == {"script": "/fsx/leandro/git/Megatron-LM-BC/pretrain_gpt.py",
                                           "read": str(tmp_path.resolve() / "pretrain_gpt.py")}
    VALIDATOR.validate(json.loads(json.dumps(doc)))  # the contract, with its new part
    broken = json.loads(json.dumps(doc))
    del broken["launch"]["entry_read"]["read"]
    assert not VALIDATOR.is_valid(broken)
    text = scan_report(doc, width=400)
    assert f"entry script: /fsx/leandro/git/Megatron-LM-BC/pretrain_gpt.py is not here; read {tmp_path.resolve()}" in text
