"""A torch-launched entry that hands the run to a package no rules model: INCONCLUSIVE, never a
verdict on megatron-core's defaults (auditor/config/entry_stack.py `unknown_stack`,
rules/stacks.toml `[unknown_stack]`).

RUN_CLM is written after huggingface/transformers examples/pytorch/language-modeling/
run_clm_no_trainer.py (commit 3c354ea20e347edb9413ada30911e9fdc242719d): argparse, torch,
datasets, transformers, then `from accelerate import Accelerator` and the whole training loop
through `accelerator.prepare(...)`; started with `torchrun --nproc_per_node 8 run_clm_no_trainer.py
...`. accelerate (its Megatron-LM plugin, ACCELERATE_USE_MEGATRON_LM) is in no rules file: what it
runs is not megatron-core's schedule on its defaults. FANCY is the same shape on a package of
no one's rules (`fancylib.run(args)`).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from auditor import cli
from auditor.config.entry_stack import UnknownStack, modeled_packages
from auditor.config.launch import read_launch, refuse_not_pipeline
from auditor.rulebook.frameworks import audited_packages

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())

RUN_SH = "#!/bin/bash\ntorchrun --nproc_per_node 8 {entry} --foo 1\n"
FANCY = """import argparse
import torch
import torch.distributed as dist
import fancylib

parser = argparse.ArgumentParser()
parser.add_argument("--foo", type=int)
args = parser.parse_args()
fancylib.run(args)
"""
RUN_CLM = """import argparse
import math
import datasets
import torch
from torch.utils.data import DataLoader
import transformers
from accelerate import Accelerator, DistributedType
from transformers import AutoConfig, AutoModelForCausalLM, get_scheduler

accelerator = Accelerator()
model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained("gpt2"))
model = accelerator.prepare(model)
"""


def _write(tmp_path: Path, entry: str, text: str, launch: str = RUN_SH) -> Path:
    target = tmp_path / entry
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(launch.format(entry=entry), encoding="utf-8")
    return script


def _scan(capsys, script: Path) -> tuple[int, dict]:
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("pin", ["", "# megatron-core==0.17.0\n"])
def test_an_entry_on_an_unmodelled_package_is_inconclusive(capsys, tmp_path, pin):
    """A `# megatron-core==X` pin says which release is installed, not that the entry uses it."""
    code, doc = _scan(capsys, _write(tmp_path, "train.py", FANCY, pin + RUN_SH))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == verdict["exit_code"] == 1
    assert verdict["headline"].startswith("INCONCLUSIVE: train.py runs fancylib, which no rules model")
    assert "train.py:4 imports fancylib" in verdict["headline"]
    assert not doc["sites"] and not doc["targets"]  # no verdict on megatron-core's analysis
    assert verdict["undecided"][0]["decide"].startswith("`p2paudit record")


def test_accelerate_s_loop_is_inconclusive(tmp_path):
    with pytest.raises(UnknownStack) as caught:
        refuse_not_pipeline(read_launch(_write(tmp_path, "run_clm_no_trainer.py", RUN_CLM)))
    assert caught.value.what.startswith("run_clm_no_trainer.py runs accelerate, which no rules model")


@pytest.mark.parametrize("launcher", ["srun --ntasks-per-node 8 python", "mpirun -np 8 python"])
def test_a_cluster_launcher_starting_the_entry_is_read_too(tmp_path, launcher):
    """srun/mpirun starting the entry itself are read as Megatron-LM's front end as torchrun is
    (rules/megatron-lm.toml launchers): the entry's imports decide the stack there too."""
    script = _write(tmp_path, "train.py", FANCY, f"{launcher} {{entry}} --foo 1\n")
    with pytest.raises(UnknownStack):
        refuse_not_pipeline(read_launch(script))


def test_a_module_entry_is_read_too(tmp_path):
    """`torchrun -m pkg.train`, found from the working directory (config.entry_module)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    script = _write(tmp_path, "pkg/train.py", FANCY, "torchrun --nproc_per_node 8 -m pkg.train --foo 1\n")
    with pytest.raises(UnknownStack) as caught:
        refuse_not_pipeline(read_launch(script))
    assert caught.value.what.startswith("pkg/train.py runs fancylib")


@pytest.mark.parametrize("local, line", [
    ("", "from megatron.core import parallel_state"),  # megatron itself
    ("model.py", "from megatron.training import get_args"),  # megatron through a local module
    ("", "import mcore_adapter"),  # a wrapper the rules model (rules/roll.toml)
    ("", "import deepspeed"),  # another modelled stack
    ("", "from torch.distributed.pipelining import pipeline"),  # torch's own pipelining
    ("", "import nanotron"),  # a stack of its own: NOT COVERED (rules/stacks.toml [[own_pipeline]])
    ("model.py", "import torch\ndef step(t):\n    torch.distributed.batch_isend_irecv([t])"),  # P2P of its own
])
def test_a_known_stack_keeps_its_answer(tmp_path, local, line):
    entry = FANCY
    if local:
        (tmp_path / local).write_text(line + "\n", encoding="utf-8")
        entry = f"import {local[:-3]}\n{FANCY}"
    else:
        entry = f"{line}\n{FANCY}"
    launch = read_launch(_write(tmp_path, "train.py", entry))
    assert not any(d.kind == "launch.unknown-stack" for d in launch.diagnostics)


def test_a_megatron_lm_checkout_beside_the_entry_keeps_the_analysis(tmp_path):
    """NVIDIA/Megatron-LM pretrain_gpt.py (commit 0d7e02bd26...) imports `megatron` from the
    checkout it sits in: local code, and the megatron stack, whatever else it imports."""
    pkg = tmp_path / "megatron"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import transformer_engine\n", encoding="utf-8")
    launch = read_launch(_write(tmp_path, "pretrain_gpt.py", "from megatron import training\nimport apex\n"))
    assert not any(d.kind == "launch.unknown-stack" for d in launch.diagnostics)


def test_modelled_packages_are_the_rules(tmp_path):
    """Which packages count as modelled comes from the rules: every framework's `packages`."""
    assert set(audited_packages()) <= set(modeled_packages())
    assert {"megatron", "mcore_adapter", "swift", "verl", "nemo", "torchtitan", "deepspeed",
            "nanotron", "colossalai"} <= set(modeled_packages())
