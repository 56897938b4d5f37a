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

import ast
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
def model_provider(pre_process=True, post_process=True):
    if args.deepspeed and not args.no_pipeline_parallel:
        return GPTModelPipe(config=config)
if __name__ == "__main__":
    pretrain(train_valid_test_datasets_provider, model_provider, forward_step)
'''
# finetune_llama.py (:16 `from megatron.model import GPTModel, GPTModelPipe`, :46-47 the pipeline
# model under --deepspeed, :346 `pretrain(...)`): an entry whose name no `pretrain_*.py` gives
FINETUNE = '''
from megatron.model import GPTModel, GPTModelPipe
from megatron.training import pretrain
def model_provider(pre_process=True, post_process=True):
    if args.deepspeed and not args.no_pipeline_parallel:
        model = GPTModelPipe(config=config, num_tokentypes=0, parallel_output=True)
    else:
        model = GPTModel(config=config)
    return model
if __name__ == "__main__":
    pretrain(prompt_train_valid_test_datasets_provider, model_provider, forward_step)
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
    for file, body in {"pretrain_gpt.py": PRETRAIN, "finetune_llama.py": FINETUNE,
                       "megatron/arguments.py": ARGUMENTS}.items():
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


FINETUNE_SH = """#!/bin/bash
torchrun --nproc_per_node 8 {script} --deepspeed --deepspeed_config ds.json \\
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --num-layers 32
"""


def test_an_entry_building_its_pipeline_model_is_megatron_deepspeed(tmp_path):
    """finetune_llama.py builds GPTModelPipe under --deepspeed as pretrain_gpt.py does: the run is
    Megatron-DeepSpeed's, its pipeline DeepSpeed's engine (review r36-falseclean 2: before, read
    as Megatron-LM's front end and judged on megatron-core's schedule, FINDINGS under DETAIL)."""
    launch = read_launch(checkout(tmp_path, "finetune.sh", FINETUNE_SH.format(script="finetune_llama.py")))
    assert launch.launcher == "megatron-deepspeed finetune_llama.py"
    assert any(d.kind == "launch.front-end" for d in launch.diagnostics)


def test_a_pipeline_model_of_the_same_name_elsewhere_is_no_such_entry(tmp_path):
    """GPTModelPipe is that framework's class only in its checkout (the front end's `code` in
    its `source` file); an entry of the checkout that builds none is no such entry either."""
    elsewhere = tmp_path / "other" / "finetune.sh"
    elsewhere.parent.mkdir()
    elsewhere.write_text(FINETUNE_SH.format(script="finetune_llama.py"))
    (elsewhere.parent / "finetune_llama.py").write_text(dedent(FINETUNE))
    assert read_launch(elsewhere).launcher != "megatron-deepspeed finetune_llama.py"
    script = checkout(tmp_path / "mds", "finetune.sh", FINETUNE_SH.format(script="tasks_main.py"))
    (script.parent / "tasks_main.py").write_text("from megatron.model import GPTModel\nmodel = GPTModel(config)\n")
    assert not read_launch(script).launcher.startswith("megatron-deepspeed")


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


@pytest.mark.skipif(not (MDS / "megatron/model/gpt_model.py").is_file(),
                    reason="the Megatron-DeepSpeed checkout (benchmarks/real_scripts/fetch.py) is not here")
def test_each_pipeline_model_is_a_deepspeed_pipeline_module():
    """The front end's `pipeline_models` are classes of its checkout at `pipeline_models_source`,
    each a subclass of DeepSpeed's PipelineModule (deepspeed.pipe): building one runs DeepSpeed's
    pipeline engine, whichever launcher starts the rank."""
    data = tomllib.loads((ROOT / "rules" / "deepspeed.toml").read_text())
    fronts = [f for f in data["front_end"] if f.get("pipeline_models")]
    assert fronts
    for front in fronts:
        path, line = front["pipeline_models_source"].split()[1].rsplit(":", 1)
        tree = ast.parse((MDS / path).read_text())
        imported = {a.asname or a.name: f"{n.module}.{a.name}" for n in ast.walk(tree)
                    if isinstance(n, ast.ImportFrom) for a in n.names}
        classes = {c.name: c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)}
        for name in front["pipeline_models"]:
            bases = [imported.get(getattr(b, "id", ""), "") for b in classes[name].bases]
            assert "deepspeed.pipe.PipelineModule" in bases, (name, bases)
        assert classes[front["pipeline_models"][0]].lineno == int(line)


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
