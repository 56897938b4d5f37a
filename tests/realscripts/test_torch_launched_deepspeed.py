"""A torch launcher's entry that builds DeepSpeed's PipelineModule runs DeepSpeed's pipeline
engine, whoever starts its ranks: INCONCLUSIVE, naming DeepSpeed's launcher's reading, never
CLEAN on megatron-core's defaults (auditor/config/entry_stack.py `deepspeed_pipeline`,
rules/stacks.toml `[torch_launched_deepspeed]`).

EVAL_PIPE is written after microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
training/pipeline_parallelism/train.py (get_args, `PipelineModule(layers=..., num_stages=args.
pipeline_parallel_size)`, `deepspeed.initialize(args=args, model=net, ...)`), with the step an
evaluation, `engine.eval_batch(...)` only, as microsoft/Megatron-DeepSpeed@f4157bea69f3df8c6cb66f2ebcda66ba03d1288e
tasks/eval_harness/evaluate.py:245 runs it; started with torchrun or python instead of
`deepspeed` (deepspeed.initialize reads the ranks torchrun sets). Before, the entry was read as
Megatron-LM's front end on megatron-core's defaults: CLEAN, 0 reachable P2P site(s), while
eval_batch runs InferenceSchedule's blocking send/recv of activations between the 2 stages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli, rulebook, sources
from auditor.config.entry_stack import UnknownStack
from auditor.config.launch import NotAPipelineRun, read_launch, refuse_not_pipeline

EVAL_PIPE = """import argparse

import deepspeed
import torch
from deepspeed.pipe import PipelineModule


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("-p", "--pipeline-parallel-size", type=int, default=2)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def evaluate(args):
    net = PipelineModule(layers=[torch.nn.Linear(32, 32) for _ in range(8)], loss_fn=torch.nn.MSELoss(),
                         num_stages=args.pipeline_parallel_size)
    engine, _, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())
    for _ in range(10):
        engine.eval_batch(iter([(torch.zeros(4, 32), torch.zeros(4, 32))]))


if __name__ == "__main__":
    deepspeed.init_distributed()
    evaluate(get_args())
"""
HEAD = "#!/bin/bash\n# deepspeed==0.16.0\n# torch==2.13.0\n"
ARGS = "evalpipe.py --deepspeed_config ds_config.json --pipeline-parallel-size 2\n"


def _write(tmp_path: Path, launcher: str, entry: str = EVAL_PIPE) -> Path:
    (tmp_path / "evalpipe.py").write_text(entry, encoding="utf-8")
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}\n', encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(f"{HEAD}{launcher} {ARGS}", encoding="utf-8")
    return script


def _scan(capsys, script: Path, *more: str) -> tuple[int, dict]:
    code = cli.main(["scan", "--config", str(script), "--format", "json", *more])
    return code, json.loads(capsys.readouterr().out)


def test_the_line_named_is_the_pipeline_classs_where_its_module_is_not_imported(capsys, tmp_path):
    """`from deepspeed import PipelineModule`, then `PipelineModule(...)`: the line of the bare
    name (review r36-falseclean: it said `evalpipe.py:0`)."""
    entry = EVAL_PIPE.replace("from deepspeed.pipe import PipelineModule", "from deepspeed import PipelineModule")
    _, doc = _scan(capsys, _write(tmp_path, "torchrun --nproc_per_node 2", entry))
    line = entry.split("\n").index("    net = PipelineModule(layers=[torch.nn.Linear(32, 32) for _ in range(8)], "
                                    "loss_fn=torch.nn.MSELoss(),") + 1
    assert f"builds DeepSpeed's PipelineModule (evalpipe.py:{line})" in doc["verdict"]["headline"]


def test_torchrun_of_a_deepspeed_pipeline_is_inconclusive_naming_deepspeeds_launcher(capsys, tmp_path):
    code, doc = _scan(capsys, _write(tmp_path, "torchrun --nproc_per_node 2"))
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == verdict["exit_code"] == 1
    assert verdict["headline"].startswith("INCONCLUSIVE: evalpipe.py builds DeepSpeed's PipelineModule "
                                          "(evalpipe.py:5)")
    assert verdict["undecided"][0]["decide"].startswith("--command 'deepspeed --num_gpus N evalpipe.py ...'")
    assert not doc["sites"]  # no verdict on megatron-core's defaults


@pytest.mark.parametrize("launcher", ["python", "python -m torch.distributed.run --nproc_per_node 2"])
def test_other_torch_launchers_are_read_so_too(tmp_path, launcher):
    with pytest.raises(UnknownStack) as caught:
        refuse_not_pipeline(read_launch(_write(tmp_path, launcher)))
    assert caught.value.what.startswith("evalpipe.py builds DeepSpeed's PipelineModule")


def test_the_step_it_names_decides_it(capsys, tmp_path, real_sources):
    """DeepSpeed's launcher's reading: the engine's blocking send/recv reached, none batched."""
    script = _write(tmp_path, "torchrun --nproc_per_node 2")
    code, doc = _scan(capsys, script, "--command", f"deepspeed --num_gpus 2 {ARGS.strip()}")
    assert doc["verdict"]["status"] == "clean" and code == 0
    reached = {s["function"] for s in doc["sites"] if s.get("reachable") == "yes"}
    assert reached == {"TorchBackend.send", "TorchBackend.recv"}


def test_an_entry_that_imports_megatron_too_keeps_its_reading(tmp_path):
    """Megatron-DeepSpeed's pretrain_gpt.py builds GPTModelPipe, a PipelineModule, from its own
    `megatron` package: its front end's rules read it (rules/deepspeed.toml [[front_end]])."""
    launch = read_launch(_write(tmp_path, "torchrun --nproc_per_node 2",
                                "from megatron.training import pretrain\n" + EVAL_PIPE))
    assert not any(d.kind == "launch.unknown-stack" for d in launch.diagnostics)


# Written after microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
# training/bing_bert/deepspeed_train.py (its own `turing` package beside it, `deepspeed.initialize(
# args=args, model=model.network, ...)` at :468 on a plain BERT, no PipelineModule anywhere in
# training/bing_bert) run as 1-bit_adam/mpi_ethernet/mpi_train_bert_onebitadam_bsz4k_seq128_ethernet.sh
# runs it: `mpirun -n 128 -npernode 4 -hostfile /job/hostfile ... python ${base_dir}/../../deepspeed_train.py`.
# Before, the mpirun entry was read as Megatron-LM's front end on megatron-core's defaults: CLEAN,
# 0 sites, while `deepspeed deepspeed_train.py` (the 1-bit_adam/mpi_infiniband sibling) read
# NOT A PIPELINE RUN.
BERT_TRAIN = """import argparse
import os

import deepspeed
import torch
from turing.models import BertMultiTask


def prepare_model_optimizer(args):
    deepspeed.init_distributed(dist_backend="nccl")
    model = BertMultiTask(args)
    model.network, optimizer, _, _ = deepspeed.initialize(
        args=args, model=model.network, model_parameters=model.network.parameters())
    return model, optimizer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cf", type=str)
    args = deepspeed.add_config_arguments(parser).parse_args()
    model, optimizer = prepare_model_optimizer(args)
    for _ in range(10):
        loss = model.network(torch.zeros(4, 128))
        model.network.backward(loss)
        model.network.step()


if __name__ == "__main__":
    main()
"""
# turing/utils.py imports tensorboardX (get_sample_writer), a package no rules file lists, and
# builds its batch class from a text template it exec's (namedtorchbatch, :153): the closure is not
# surely pipeline-free by its imports alone (rules/stacks.toml [no_pipeline]).
BERT_MODELS = """import torch
from tensorboardX import SummaryWriter

_class_template = "class {typename}(tuple):\\n    __slots__ = ()\\n"


def namedtorchbatch(typename):
    namespace = dict(__name__="namedtuple_%s" % typename)
    exec(_class_template.format(typename=typename), namespace)
    return namespace[typename]


class BertMultiTask:
    def __init__(self, args):
        self.network = torch.nn.Linear(128, 128)
"""
MPIRUN = ("#!/bin/bash\nbase_dir=`pwd`\n"
          "mpirun -n 128 -npernode 4 -hostfile /job/hostfile -x NCCL_IB_DISABLE=1 python "
          "${base_dir}/../../deepspeed_train.py --cf ${base_dir}/../../bert_large.json --deepspeed "
          "--deepspeed_config ${base_dir}/ds_config.json &> train.log\n")


def _bert(tmp_path: Path, entry: str = BERT_TRAIN, launch: str = MPIRUN) -> Path:
    (tmp_path / "turing").mkdir()
    (tmp_path / "turing" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "turing" / "models.py").write_text(BERT_MODELS, encoding="utf-8")
    (tmp_path / "deepspeed_train.py").write_text(entry, encoding="utf-8")
    run = tmp_path / "1-bit_adam" / "mpi_ethernet"
    run.mkdir(parents=True)
    (run / "ds_config.json").write_text('{"train_batch_size": 4096}\n', encoding="utf-8")
    (run / "run.sh").write_text(launch, encoding="utf-8")
    return run


def test_mpirun_of_a_deepspeed_engine_without_its_pipeline_is_not_a_pipeline_run(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(_bert(tmp_path))  # base_dir=`pwd`: run from the script's folder
    code, doc = _scan(capsys, Path("run.sh"))
    headline = doc["verdict"]["headline"]
    assert code == 0 and headline.startswith("NOT A PIPELINE RUN: `mpirun deepspeed_train.py` trains with "
                                             "DeepSpeed's data-parallel engine (ZeRO), not its pipeline")
    (said,) = [f for f in doc["findings"] if f["kind"] == "launch.not-pipeline"]
    assert "deepspeed.initialize at deepspeed_train.py:12 builds the engine" in said["message"]
    assert not doc.get("sites")  # not judged on megatron-core's defaults


@pytest.mark.parametrize("launcher", ["torchrun --nproc_per_node 2", "python", "srun python"])
def test_other_launchers_of_a_deepspeed_engine_are_read_so_too(tmp_path, launcher):
    run = _bert(tmp_path, launch=f"#!/bin/bash\n{launcher} ../../deepspeed_train.py --deepspeed\n")
    with pytest.raises(NotAPipelineRun) as caught:
        refuse_not_pipeline(read_launch(run / "run.sh"))
    assert "trains with DeepSpeed's data-parallel engine (ZeRO)" in caught.value.what


@pytest.mark.parametrize("change", [
    # never builds the engine itself: what it trains with is not DeepSpeed's engine by its code
    ("model.network, optimizer, _, _ = deepspeed.initialize(", "model.network, optimizer, _, _ = dict("),
    # transformers' Trainer: accelerate may turn its Megatron-LM plugin on (rules/stacks.toml [no_pipeline])
    ("from turing.models import BertMultiTask\n", "from turing.models import BertMultiTask\nfrom transformers import Trainer\n"),
    # its own sends between stages (rules/torch.toml [[p2p_api]])
    ("import torch\n", "import torch\nfrom torch.distributed import isend\n"),
    # megatron too: a front end of its own
    ("import torch\n", "import torch\nfrom megatron.training import pretrain\n"),
    # accelerate: its Megatron-LM plugin, turned on from the environment (rules/stacks.toml may_pipeline)
    ("import torch\n", "import torch\nimport accelerate\n"),
    # a module loaded by a name, or another program run: what runs is not read here
    ("import torch\n", "import torch\nimport importlib\nimportlib.import_module('megatron.training')\n"),
    ("import torch\n", "import torch\nimport os\nos.execvp('torchrun', ['torchrun', 'pretrain_gpt.py'])\n"),
])
def test_an_entry_that_is_more_than_a_deepspeed_engine_keeps_its_reading(tmp_path, monkeypatch, change):
    monkeypatch.chdir(_bert(tmp_path, BERT_TRAIN.replace(*change)))
    launch = read_launch("run.sh")
    assert not any(d.kind == "launch.not-pipeline" for d in launch.diagnostics)


def test_the_engine_fact_is_each_releases_code():
    """[pipeline_model] `engine` quotes each verified release's deepspeed/__init__.py."""
    model = rulebook.load("deepspeed").data["pipeline_model"]
    assert model["engine"] == ["deepspeed.initialize"]
    for version in rulebook.load("deepspeed").section("framework")["verified"]:
        text = (sources.resolve(f"deepspeed=={version}").root / model["engine_source"].rpartition(":")[0]).read_text()
        assert model["engine_code"] in text, version
