"""Issue 22 item 11: what a torch-launched Python entry runs on, from its own imports
(auditor/config/entry_stack.py, rules/stacks.toml).

NANOTRON is written after huggingface/nanotron examples/train_tiny_llama.sh (commit
2411b022a75fb7f7561a1bb4166706da5e1b76de): `REPO_PATH=$(dirname $EXAMPLE_PATH)`, then
`python -u -m torch.distributed.run ... $REPO_PATH/run_train.py --config-file ...`, whose
run_train.py imports nanotron (its own pipeline engine): NOT COVERED, never CLEAN.
ZERO_QUANT is written after microsoft/DeepSpeedExamples compression/gpt2/bash_script/
run_zero_quant.sh (commit 83757d9c937daabd1089a08051061706cb73900d): `python -m
torch.distributed.launch --nproc_per_node=1 run_clm_no_trainer.py ... --deepspeed`, a script
that imports torch, deepspeed (no deepspeed.pipe), transformers (no Trainer), datasets: NOT A
PIPELINE RUN. Anything that could build a pipeline unseen keeps the analysis (fail closed).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from auditor import cli
from auditor.config.entry_stack import builds_no_pipeline
from auditor.config.launch import NotCoveredRun, read_launch, refuse_not_pipeline

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())

NANOTRON = """#!/bin/bash
set -e -x
EXAMPLE_PATH=$(cd -- "$(dirname "$0")" >/dev/null 2>&1 ; pwd -P)
REPO_PATH=$(dirname $EXAMPLE_PATH)
export CUDA_DEVICE_MAX_CONNECTIONS=1
python -u -m torch.distributed.run \\
    --nproc_per_node 8 \\
    --nnodes 1 \\
    --rdzv_backend c10d \\
    --max_restarts 0 \\
    $REPO_PATH/run_train.py --config-file $EXAMPLE_PATH/config_tiny_llama.yaml
"""
RUN_TRAIN = """import argparse
import nanotron.distributed as dist
from nanotron.trainer import DistributedTrainer

parser = argparse.ArgumentParser()
parser.add_argument("--config-file", type=str, required=True)
trainer = DistributedTrainer(parser.parse_args().config_file)
trainer.train(None)
"""

ZERO_QUANT = """export CUDA_VISIBLE_DEVICES=0

python -m torch.distributed.launch --nproc_per_node=1 \\
    --master_port 12345 \\
    run_clm_no_trainer.py \\
    --model_name_or_path gpt2-large \\
    --deepspeed_config config/ds_config_W8A8_Qgroup64_fp32.json \\
    --deepspeed \\
    --output_dir ./output/W8A8
"""
RUN_CLM = """import argparse
import math
import datasets
import torch
from torch.utils.data import DataLoader
from transformers import AutoConfig, AutoModelForCausalLM, get_scheduler
import deepspeed
from deepspeed.compression.compress import init_compression
from util import evaluate

model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained("gpt2"))
model = init_compression(model, "ds_config.json")
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters())
evaluate(engine)
"""
UTIL = "import numpy as np\n\ndef evaluate(engine):\n    return np.zeros(1)\n"


def _scan(capsys, script: Path) -> tuple[int, dict]:
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _nanotron(tmp_path: Path) -> Path:
    (tmp_path / "examples").mkdir()
    (tmp_path / "run_train.py").write_text(RUN_TRAIN, encoding="utf-8")
    script = tmp_path / "examples" / "train_tiny_llama.sh"
    script.write_text(NANOTRON, encoding="utf-8")
    return script


def test_dirname_of_a_known_path_is_that_path_s_parent(tmp_path):
    launch = read_launch(_nanotron(tmp_path))
    assert launch.script == str((tmp_path / "run_train.py").resolve())


def test_an_entry_on_nanotron_is_not_covered(capsys, tmp_path):
    code, doc = _scan(capsys, _nanotron(tmp_path))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "not-covered" and code == doc["verdict"]["exit_code"] == 1
    assert head.startswith("NOT COVERED: run_train.py trains with nanotron's own trainer")
    assert "run_train.py:2 imports nanotron" in head
    assert "`p2paudit record` of a run" in doc["verdict"]["undecided"][0]["decide"]


def _zero_quant(tmp_path: Path, script_text: str = RUN_CLM) -> Path:
    (tmp_path / "run_clm_no_trainer.py").write_text(script_text, encoding="utf-8")
    (tmp_path / "util.py").write_text(UTIL, encoding="utf-8")
    script = tmp_path / "run_zero_quant.sh"
    script.write_text(ZERO_QUANT, encoding="utf-8")
    return script


def test_an_entry_importing_nothing_that_pipelines_is_no_pipeline_run(capsys, tmp_path):
    code, doc = _scan(capsys, _zero_quant(tmp_path))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0
    assert head.startswith("NOT A PIPELINE RUN: `python -m torch.distributed.launch run_clm_no_trainer.py` "
                           "builds no pipeline: run_clm_no_trainer.py and the 1 local module(s)")
    assert "deepspeed, numpy, torch, transformers" in head


@pytest.mark.parametrize("line", [
    "from deepspeed.pipe import PipelineModule",  # DeepSpeed's pipeline engine (rules/deepspeed.toml)
    "from torch.distributed.pipelining import pipeline",  # torch's own (rules/pipelining.toml)
    "from transformers import Trainer",  # accelerate's Megatron-LM plugin may run behind it
    "import accelerate",  # a package the rules do not list
    "from megatron.core import parallel_state",
    "import importlib\nimportlib.import_module('megatron.training')",  # code not seen
])
def test_what_could_build_a_pipeline_keeps_the_analysis(tmp_path, line):
    launch = read_launch(_zero_quant(tmp_path, f"{line}\n{RUN_CLM}"))
    assert not any(d.kind == "launch.not-pipeline" for d in launch.diagnostics)


# hpcaitech/ColossalAI examples/language/llama/benchmark.py (commit a616e914b274d9015706fb3f4df6280fe342c02b)
# is started by `colossalai run` or torchrun and boosts its model with HybridParallelPlugin(pp_size=...).
COLOSSAL = """import colossalai
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

colossalai.launch_from_torch()
booster = Booster(plugin=HybridParallelPlugin(tp_size=1, pp_size=2, microbatch_size=1))
"""


def test_an_entry_on_colossalai_is_not_covered(tmp_path):
    (tmp_path / "benchmark.py").write_text(COLOSSAL, encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 benchmark.py --pp 2\n", encoding="utf-8")
    with pytest.raises(NotCoveredRun) as caught:
        refuse_not_pipeline(read_launch(script))
    assert caught.value.what.startswith("benchmark.py trains with ColossalAI") and "benchmark.py:1" in caught.value.what


def test_local_code_calling_torch_p2p_keeps_the_analysis(tmp_path):
    """A checkout's own megatron/ beside the entry (NVIDIA/Megatron-LM pretrain_gpt.py, commit
    0d7e02bd26...) is local code: its p2p_communication.py calls torch.distributed's P2P API."""
    pkg = tmp_path / "megatron"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "p2p_communication.py").write_text(
        "import torch\n\ndef send_forward(t, peer):\n    torch.distributed.isend(t, peer)\n", encoding="utf-8")
    launch = read_launch(_zero_quant(tmp_path, f"from megatron.p2p_communication import send_forward\n{RUN_CLM}"))
    assert not any(d.kind == "launch.not-pipeline" for d in launch.diagnostics)


def test_the_launch_finding_is_what_the_entry_reader_says(tmp_path):
    launch = read_launch(_zero_quant(tmp_path))
    said = next(d.message for d in launch.diagnostics if d.kind == "launch.not-pipeline")
    assert said == builds_no_pipeline(launch)
    launch.launcher = "deepspeed run_clm_no_trainer.py"  # DeepSpeed's launcher: config.deepspeed_entry's
    assert builds_no_pipeline(launch) is None
