"""Which DeepSpeed engine an entry runs is decided once, from what its closure imports
(auditor/config/deepspeed_engine.py), for `deepspeed SCRIPT` and the torch and cluster launchers
alike: DeepSpeed's data-parallel engine (NOT A PIPELINE RUN) only where every import is resolved
to the standard library, a local file read, DeepSpeed or a package rules/stacks.toml
[no_pipeline] lists and nothing else could pipeline; the PipelineEngine only where it builds a
PipelineModule; else INCONCLUSIVE, naming what it cannot vouch for.

The entries are written after these upstream files:
- microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
  benchmarks/communication/pt2pt.py (run `deepspeed pt2pt.py`, its README): `sys.path.append(
  os.path.join(os.path.dirname(__file__), "../"))`, `from communication.utils import *`, and
  `dist.send(input, 1)` / `dist.recv(input, src=0)` of its own (:31-53), no PipelineModule.
  Before, it was judged on DeepSpeed's PipelineEngine, which it never builds (CLEAN).
- the same commit's training/bing_bert/deepspeed_train.py (`deepspeed.initialize(args=args,
  model=model.network, ...)`, its `turing` package beside it), run by mpirun or deepspeed, with
  one more import: a module found only through a `sys.path` edit, a file exec'd, fairscale's
  Pipe. Before, each read NOT A PIPELINE RUN (third-party packages not read).
- the same commit's training/DeepSpeed-Domino/pretrain_gpt.py (`deepspeed pretrain_gpt.py`):
  its `domino` package imports the Megatron copy beside it (domino/tensor_parallel/partition.py:15
  `from megatron.core...`), whose pipeline_parallel/p2p_communication.py sends with torch's P2P;
  no PipelineModule anywhere. Before, it was judged on DeepSpeed's PipelineEngine (CLEAN).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor.config.deepspeed_engine import unseen_code
from auditor.config.entry_stack import UnknownStack
from auditor.config.launch import NotAPipelineRun, read_launch, refuse_not_pipeline
from tests.realscripts.test_torch_launched_deepspeed import BERT_TRAIN, MPIRUN, _bert, _scan

PT2PT = """import torch
import sys, os, time

COMMS_BENCH_DIR = os.path.join(os.path.dirname(__file__), "../")
sys.path.append(COMMS_BENCH_DIR)

from communication.utils import *
from deepspeed.accelerator import get_accelerator


def run_pt2pt(local_rank, args):
    import deepspeed.comm as dist
    input = torch.zeros(1024, device=get_accelerator().device_name(local_rank))
    for _ in range(10):
        if dist.get_rank() == 0:
            dist.send(input, 1)
        else:
            dist.recv(input, src=0)


if __name__ == "__main__":
    args = benchmark_parser().parse_args()
    init_processes(local_rank=int(os.environ["LOCAL_RANK"]), args=args)
    run_pt2pt(int(os.environ["LOCAL_RANK"]), args)
"""
UTILS = """import argparse
import os

import deepspeed


def init_processes(local_rank, args):
    deepspeed.init_distributed(dist_backend="nccl")


def benchmark_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int)
    return parser
"""


def _pt2pt(tmp_path: Path) -> Path:
    comm = tmp_path / "benchmarks" / "communication"
    comm.mkdir(parents=True)
    (comm / "__init__.py").write_text("", encoding="utf-8")
    (comm / "utils.py").write_text(UTILS, encoding="utf-8")
    (comm / "pt2pt.py").write_text(PT2PT, encoding="utf-8")
    (comm / "run.sh").write_text("#!/bin/bash\n# deepspeed==0.16.0\n# torch==2.13.0\n"
                                 "deepspeed --num_gpus 2 pt2pt.py\n", encoding="utf-8")
    return comm / "run.sh"


def _undecided(script: Path | str) -> str:
    with pytest.raises(UnknownStack) as caught:
        refuse_not_pipeline(read_launch(str(script)))
    return caught.value.what


def test_a_deepspeed_launched_scripts_own_sends_are_not_judged_on_an_engine_it_never_builds(capsys, tmp_path):
    code, doc = _scan(capsys, _pt2pt(tmp_path))
    assert code == 1 and doc["verdict"]["status"] == "inconclusive", doc["verdict"]
    headline = doc["verdict"]["headline"]
    assert "pt2pt.py never builds DeepSpeed's PipelineModule, so deepspeed.initialize builds no PipelineEngine" in headline
    assert "pt2pt.py:16 names torch's P2P API itself" in headline
    assert not doc.get("sites")  # not DeepSpeed's PipelineEngine's


@pytest.mark.parametrize("launch", [MPIRUN, "#!/bin/bash\ndeepspeed --num_gpus 2 ../../deepspeed_train.py --deepspeed\n"],
                         ids=["mpirun", "deepspeed"])
@pytest.mark.parametrize("added,named", [
    # a module found only through a sys.path edit: a Megatron-LM checkout's own folder
    ('import sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), "../Megatron-LM/megatron"))\n'
     "from training import get_model\n", "imports training, resolved to no local file"),
    # a file's text run: what it imports is not read here
    ('exec(open(os.path.join(os.path.dirname(__file__), "setup_env.py")).read())\n', "runs code not read here"),
    # fairscale's pipeline, a package no rules file lists
    ("from fairscale.nn import Pipe\n", "imports fairscale.nn, resolved to no local file"),
], ids=["sys-path", "exec-file", "fairscale"])
def test_an_import_not_resolved_leaves_the_engine_undecided_under_every_launcher(tmp_path, monkeypatch, launch,
                                                                                  added, named):
    entry = BERT_TRAIN.replace("from turing.models import BertMultiTask\n",
                               "from turing.models import BertMultiTask\n" + added)
    monkeypatch.chdir(_bert(tmp_path, entry, launch))
    what = _undecided("run.sh")
    assert "deepspeed_train.py never builds DeepSpeed's PipelineModule" in what and named in what


def test_a_megatron_copy_beside_the_entry_is_not_deepspeeds_pipeline_engine(tmp_path, monkeypatch):
    (tmp_path / "domino" / "tensor_parallel").mkdir(parents=True)
    (tmp_path / "megatron" / "core" / "pipeline_parallel").mkdir(parents=True)
    for package in ("domino", "domino/tensor_parallel", "megatron", "megatron/core", "megatron/core/pipeline_parallel"):
        (tmp_path / package / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "megatron" / "core" / "pipeline_parallel" / "p2p_communication.py").write_text(
        "import torch\n\n\ndef send_forward(t, group):\n    torch.distributed.isend(t, 1, group)\n", encoding="utf-8")
    (tmp_path / "domino" / "tensor_parallel" / "partition.py").write_text(
        "import torch\nfrom deepspeed.runtime.domino.transformer import DominoTransformer\n"
        "from megatron.core.pipeline_parallel import p2p_communication\n", encoding="utf-8")
    (tmp_path / "pretrain_gpt.py").write_text(
        "import torch\nfrom domino.tensor_parallel.partition import DominoTransformer\n\n"
        "if __name__ == '__main__':\n    DominoTransformer()\n", encoding="utf-8")
    (tmp_path / "run.sh").write_text("#!/bin/bash\ncmd=\"deepspeed --num_gpus 2 pretrain_gpt.py --tensor-model-parallel-size 2\"\n"
                                     "eval $cmd\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    what = _undecided("run.sh")
    assert "domino/tensor_parallel/partition.py:3 imports megatron, a stack the rules model" in what
    (said,) = [d for d in read_launch("run.sh").diagnostics if d.kind == "launch.unknown-stack"]
    assert said.detail["packages"] == ["megatron"]


@pytest.mark.parametrize("added", [
    # a Python 2 fallback that never runs where the first import is the standard library's
    "try:\n    from urllib.parse import urlparse\nexcept ImportError:\n    from urlparse import urlparse\n",
    # names rules/stacks.toml [no_pipeline] `inert_names` lists
    "from accelerate import init_empty_weights\nfrom transformers.integrations.deepspeed import HfDeepSpeedConfig\n",
], ids=["py2-fallback", "inert-names"])
def test_what_builds_nothing_keeps_the_data_parallel_engine(tmp_path, monkeypatch, added):
    entry = BERT_TRAIN.replace("import torch\n", "import torch\n" + added, 1)
    monkeypatch.chdir(_bert(tmp_path, entry))
    with pytest.raises(NotAPipelineRun) as caught:
        refuse_not_pipeline(read_launch("run.sh"))
    assert "trains with DeepSpeed's data-parallel engine (ZeRO)" in caught.value.what


def test_a_local_namespace_package_is_read_as_local(tmp_path, monkeypatch):
    """DeepSpeed-Chat's dschat has no __init__.py (`from dschat.utils.data import raw_datasets`,
    dschat/utils/data/data_utils.py:17): a folder beside the entry, not a third-party package."""
    run = _bert(tmp_path, BERT_TRAIN.replace("import torch\n", "import torch\nfrom chat.data import raw\n", 1))
    (tmp_path / "chat" / "data").mkdir(parents=True)
    (tmp_path / "chat" / "data" / "raw.py").write_text("import json\n", encoding="utf-8")
    monkeypatch.chdir(run)
    with pytest.raises(NotAPipelineRun):
        refuse_not_pipeline(read_launch("run.sh"))


@pytest.mark.parametrize("code,unseen", [
    # DeepSpeedExamples' bing_bert turing/utils.py:153: a class template of the file's own, formatted
    ('T = "class {n}(tuple): pass"\n\ndef make(n):\n    text = T.format(n=n)\n    exec(text, {})\n', 0),
    ('exec("x = 1")\n', 0),
    ('exec(f"x = {1}")\n', 1),  # not a plain literal: not read in full
    # a file's text, a name bound to anything but the file's own literals
    ('import os\nexec(open(os.environ["SETUP"]).read())\n', 2),
    ('def run(text):\n    exec(text)\n', 2),
    ('import importlib\nimportlib.import_module("megatron.training")\n', 2),
])
def test_only_text_the_file_builds_is_read_as_its_own_code(code, unseen):
    assert unseen_code(ast.parse(code), ["exec", "eval", "importlib.import_module"], ["exec", "eval"]) == unseen
