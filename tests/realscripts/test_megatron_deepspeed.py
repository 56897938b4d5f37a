"""Megatron-DeepSpeed is a stack of its own: with --deepspeed and without --no-pipeline-parallel
its pipeline is DeepSpeed's engine (blocking send/recv, nothing batched), and a one-stage run
is decided without a question that cannot change the answer.

The scripts reproduce microsoft/Megatron-DeepSpeed (commit f4157bea69f3df8c6cb66f2ebcda66ba03d1288e) examples_deepspeed/pretrain_llama2_distributed.sh (`torchrun $DISTRIBUTED_ARGS
pretrain_gpt.py ... --pipeline-model-parallel-size $PP ... $ds_args` with
`ds_args=" --deepspeed ${ds_args}"`, PP=2) and examples_deepspeed/azure/run-175b.sh
(`deepspeed --force_multi --num_nodes=$NODES --hostfile $HF pretrain_gpt.py ...
--pipeline-model-parallel-size $PP ... $ds_args`, PP=1, `ds_args=" --no-pipeline-parallel ${ds_args}"`).
The mini checkout's megatron/arguments.py has that commit's shape: `parser =
deepspeed.add_config_arguments(parser)` and `--no-pipeline-parallel` / `--pipeline-model-parallel-size`.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from textwrap import dedent

import pytest

from auditor.analysis.verdict import judge
from auditor.config.derive import derive
from auditor.config.launch import read_launch
from auditor.scan import ScanInputs, run_scan

ROOT = Path(__file__).resolve().parents[2]
ARGUMENTS = '''
import argparse
import deepspeed

def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser = _add_distributed_args(parser)
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    args.ds_pipeline_enabled = not args.no_pipeline_parallel
    return args

def _add_distributed_args(parser):
    group = parser.add_argument_group(title='distributed')
    group.add_argument('--tensor-model-parallel-size', type=int, default=1)
    group.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    group.add_argument('--no-pipeline-parallel', action='store_true')
    group.add_argument('--num-layers', type=int, default=None)
    return parser
'''
PRETRAIN = '''
from megatron.training import pretrain
if __name__ == "__main__":
    pretrain(train_valid_test_datasets_provider, model_provider, forward_step)
'''
LLAMA2 = '''#!/bin/bash
# torch=={torch}
{detail}
set -ex
PP=2
TP=2
ds_args=""
ds_args=" --deepspeed ${{ds_args}}"
ds_args=" --deepspeed_config=ds_config.json ${{ds_args}}"
DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes 1"
torchrun $DISTRIBUTED_ARGS \\
       pretrain_gpt.py \\
       --tensor-model-parallel-size $TP \\
       --pipeline-model-parallel-size $PP \\
       --num-layers 32 \\
       $ds_args
'''
AZURE = '''#!/bin/bash
# torch==2.13.0
PP=1
NODES=1
ds_args=""
ds_args=" --deepspeed ${ds_args}"
ds_args=" --no-pipeline-parallel ${ds_args}"
ds_args=" --deepspeed_config=ds_config.json ${ds_args}"
deepspeed --force_multi --num_nodes=$NODES --num_gpus 8 pretrain_gpt.py \\
    --tensor-model-parallel-size 1 \\
    --pipeline-model-parallel-size $PP \\
    --num-layers 96 \\
    $ds_args
'''
DS_RELEASE = "0.16.0"


def checkout(root: Path, name: str, text: str) -> Path:
    for file, body in {"pretrain_gpt.py": PRETRAIN, "megatron/arguments.py": ARGUMENTS}.items():
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        (root / file).write_text(dedent(body))
    script = root / "examples_deepspeed" / name
    script.parent.mkdir(exist_ok=True)
    script.write_text(text)
    return script


def test_deepspeed_flag_puts_the_pipeline_on_deepspeed_s_engine(tmp_path):
    script = checkout(tmp_path, "pretrain_llama2_distributed.sh", LLAMA2.format(torch="2.13.0", detail=""))
    launch = read_launch(script)
    assert launch.launcher == "megatron-deepspeed pretrain_gpt.py"
    assert any(d.kind == "launch.front-end" and "PipelineModule" in d.message for d in launch.diagnostics)
    config = derive(launch, {"deepspeed": DS_RELEASE}, None, "2.13.0")
    assert config.value("pipeline_model_parallel_size") == 2
    # the Megatron-DeepSpeed front end states PP: torch's check reads it as this run's own
    # setting, not as another stack's; DeepSpeed 0.16.0 passes no device_id (rules
    # deepspeed.init-device-id): lazy init on NCCL, so it is raised, not left undecided
    assert not [u for u in config.undecided if u.startswith("torch.lazy-init-unbounded")]
    assert "lazy-init-unbounded" in {f.kind for f in config.findings}


def test_detail_un_batches_nothing_on_deepspeed_s_engine(tmp_path):
    script = checkout(tmp_path, "pretrain_llama2_distributed.sh",
                      LLAMA2.format(torch="2.10.0", detail="export TORCH_DISTRIBUTED_DEBUG=DETAIL"))
    doc = run_scan(ScanInputs(str(script), targets=[f"deepspeed=={DS_RELEASE}"], jobs=1))
    assert doc["entries"] == ["deepspeed pipeline engine"]
    assert judge(doc).status != "findings"
    assert not [f for f in doc["findings"] if f["kind"] == "unbatched-contradiction"]


def test_one_stage_is_decided_clean_without_a_torch_question(tmp_path):
    script = checkout(tmp_path, "run-175b.sh", AZURE)
    launch = read_launch(script)
    assert launch.launcher == "megatron-deepspeed pretrain_gpt.py"
    doc = run_scan(ScanInputs(str(script), targets=[f"deepspeed=={DS_RELEASE}"], jobs=1))
    v = judge(doc)
    assert v.status == "clean", v.headline
    assert doc["entries"] == []  # one stage: DeepSpeed's schedule sends nothing
    assert not v.undecided


def test_another_deepspeed_script_is_not_megatron_deepspeed(tmp_path):
    """DeepSpeed-Chat's step 1 passes --deepspeed too (deepspeed.add_config_arguments), with no
    Megatron-LM layout flag: DeepSpeed's own stack, as before."""
    script = tmp_path / "run.sh"
    script.write_text("deepspeed main.py --model_name_or_path facebook/opt-1.3b --zero_stage 2 --deepspeed\n")
    assert read_launch(script).launcher == "deepspeed main.py"


MDS = Path(os.environ.get("P2PAUDIT_MDS_CHECKOUT",
                          "/work/upstream/real_scripts/microsoft+Megatron-DeepSpeed@f4157bea69"))


@pytest.mark.skipif(not (MDS / "megatron/arguments.py").is_file(),
                    reason="the Megatron-DeepSpeed checkout (benchmarks/real_scripts/fetch.py) is not here")
def test_the_rules_quote_the_megatron_deepspeed_checkout():
    """Every Megatron-DeepSpeed entry of rules/deepspeed.toml quotes its checkout's code at the
    line it names (`source = "microsoft/Megatron-DeepSpeed@f4157bea69 PATH:LINE"`)."""
    data = tomllib.loads((ROOT / "rules" / "deepspeed.toml").read_text())
    quoted = [e for table in data.values() if isinstance(table, list) for e in table
              if str(e.get("source", "")).startswith("microsoft/Megatron-DeepSpeed@f4157bea69 ")]
    assert len(quoted) >= 4
    for e in quoted:
        path, line = e["source"].split()[1].rsplit(":", 1)
        text = (MDS / path).read_text().splitlines()[int(line) - 1]
        assert e["code"].strip() in text, (e["source"], text)


def mds_checks() -> list:
    data = tomllib.loads((ROOT / "rules" / "deepspeed.toml").read_text())
    return [pytest.param(e["id"], example, kind == "invalid", id=f"{e['id']}:{kind}{n}")
            for e in data.get("check", []) if e["stage"] == "mds-arguments"
            for kind in ("valid", "invalid") for n, example in enumerate(e.get(kind, []))]


@pytest.mark.parametrize("rule_id,example,fires", mds_checks())
def test_megatron_deepspeed_check_examples(tmp_path, rule_id, example, fires):
    """Each check's `valid` example leaves it quiet and its `invalid` one fires it, on a
    Megatron-DeepSpeed command (`deepspeed pretrain_gpt.py --deepspeed ...`)."""
    script = checkout(tmp_path, "run.sh", "deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed "
                                          f"--tensor-model-parallel-size 1 {example}\n")
    config = derive(read_launch(script), {"deepspeed": DS_RELEASE}, None, "2.13.0")
    fired = [f for f in config.findings if f.detail.get("rule") == rule_id]
    assert bool(fired) is fires, [f.message for f in config.findings]
