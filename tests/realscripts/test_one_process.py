"""Issue 22 items 10, 11: a plain `python SCRIPT.py` with no launcher around it is the run's
command (rules/megatron-lm.toml `one_process` launcher, config/one_process.py), one process.

EXPAND is written after hiyouga/LLaMA-Factory examples/extras/llama_pro/expand.sh (commit
ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30): `python scripts/llama_pro.py --model_name_or_path ...
--num_expand 8`, whose scripts/llama_pro.py imports fire, torch, transformers, safetensors and
ends in `fire.Fire(block_expansion)`. CONVERT after FlagOpen/FlagScale tools/checkpoint/rwkv/
convert_ckpt.sh (commit da4935ec60193e735bc70b81e259ed04eefd0132): `python convert_ckpt.py
deepspeed_model.pt megatron_model.pth --direction ds2mg`, beside the script. Both were "could not
be followed" (INCONCLUSIVE); both are one process that builds no pipeline. A program that starts
processes of its own, or joins a world its environment names, is not read as one process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.bash.values import Symbolic
from auditor.config.launch import read_launch
from auditor.config.model import LaunchConfig
from auditor.config.one_process import world
from auditor.rulebook.launchers import Spelling

EXPAND = """#!/bin/bash

python scripts/llama_pro.py \\
    --model_name_or_path meta-llama/Meta-Llama-3-8B-Instruct \\
    --output_dir models/llama3-8b-pro \\
    --num_expand 8
"""
LLAMA_PRO = """import json
import os

import fire
import torch
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM


def block_expansion(model_name_or_path: str, output_dir: str, num_expand: int):
    config = AutoConfig.from_pretrained(model_name_or_path)
    model = AutoModelForCausalLM.from_pretrained(model_name_or_path)
    state_dict = model.state_dict()
    torch.save(state_dict, os.path.join(output_dir, "pytorch_model.bin"))


if __name__ == "__main__":
    fire.Fire(block_expansion)
"""
CONVERT = "python convert_ckpt.py deepspeed_model.pt megatron_model.pth --direction ds2mg\n"
CONVERT_PY = """import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("src")
parser.add_argument("dst")
parser.add_argument("--direction", choices=["ds2mg", "mg2ds"])
args = parser.parse_args()
torch.save(torch.load(args.src), args.dst)
"""
# A user's loop that spawns its ranks itself (torch's tutorials' `mp.spawn(run, nprocs=...)`),
# each running Megatron-LM's pretrain (NVIDIA/Megatron-LM pretrain_gpt.py's `pretrain(...)` call)
SPAWN_PY = """import torch.multiprocessing as mp
from megatron.training import pretrain


def run(rank):
    pretrain(None, None, None, None)


if __name__ == "__main__":
    mp.spawn(run, nprocs=8)
"""
PP2 = "python train.py --pipeline-model-parallel-size 2 --num-layers 8 --hidden-size 64 --num-attention-heads 4\n"


def _tree(tmp_path: Path, monkeypatch, launch: str, files: dict[str, str], at: str = "run.sh") -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    script = tmp_path / at
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(launch, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the job starts at the checkout's root, as the benchmark's does
    return script


def _scan(capsys, script: Path) -> tuple[int, dict]:
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("launch, files, at, shown", [
    (EXPAND, {"scripts/llama_pro.py": LLAMA_PRO}, "examples/extras/llama_pro/expand.sh", "`python llama_pro.py`"),
    (CONVERT, {"convert_ckpt.py": CONVERT_PY}, "convert_ckpt.sh", "`python convert_ckpt.py`"),
    ("python3 -u -m tools.convert_ckpt a b\n", {"tools/convert_ckpt.py": CONVERT_PY, "tools/__init__.py": ""},
     "run.sh", "`python3 tools.convert_ckpt`"),  # a module of the checkout (config/entry_module.py)
], ids=["llama-pro-expand", "rwkv-convert", "module"])
def test_a_plain_python_command_is_one_process_that_builds_no_pipeline(capsys, tmp_path, monkeypatch,
                                                                       launch, files, at, shown):
    script = _tree(tmp_path, monkeypatch, launch, files, at)
    config = read_launch(script)
    assert (config.nproc_per_node, config.nnodes) == (1, 1)
    assert "runs one process" in config.world_source["nproc_per_node"]
    code, doc = _scan(capsys, script)
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0
    assert doc["verdict"]["headline"].startswith(f"NOT A PIPELINE RUN: {shown} builds no pipeline")


def test_a_program_that_spawns_its_ranks_is_not_one_process(tmp_path, monkeypatch):
    config = read_launch(_tree(tmp_path, monkeypatch, PP2, {"train.py": SPAWN_PY}))
    assert isinstance(config.nproc_per_node, Symbolic)
    assert "train.py:10 calls `mp.spawn` (torch.multiprocessing.spawn)" in config.world_source["nproc_per_node"]


@pytest.mark.heavy  # a megatron-core scan of the entry (~30-100 s here)
def test_pp2_over_spawned_ranks_is_not_decided_as_one_process(capsys, tmp_path, monkeypatch):
    """PP 2 over ranks the program spawns: the pipeline is analysed (not one process, not NOT A
    PIPELINE RUN); the world stays unknown, so only the start-up checks it decides stay open."""
    code, doc = _scan(capsys, _tree(tmp_path, monkeypatch, PP2, {"train.py": SPAWN_PY}))
    assert doc["verdict"]["status"] in ("clean", "inconclusive"), doc["verdict"]["headline"]
    assert doc["launch"]["world_size"] is None and "mp.spawn" in doc["launch"]["world_source"]
    assert any("nproc_per_node" in u["decide"] for u in doc["verdict"]["startup_undecided"])


@pytest.mark.parametrize("launch", [
    "export WORLD_SIZE=2 RANK=0\npython convert_ckpt.py a b\n",  # joins a world others make up
    "RANK=0 python convert_ckpt.py a b\n",
], ids=["exported", "inline"])
def test_a_world_the_environment_names_is_unknown(tmp_path, monkeypatch, launch):
    config = read_launch(_tree(tmp_path, monkeypatch, launch, {"convert_ckpt.py": CONVERT_PY}))
    assert isinstance(config.nproc_per_node, Symbolic)
    assert "is set for `python convert_ckpt.py`" in config.world_source["nproc_per_node"]


def test_code_reading_the_world_from_its_environment_is_unknown(tmp_path, monkeypatch):
    reads = "import os\nworld = int(os.environ.get('WORLD_SIZE', 1))\n" + CONVERT_PY
    config = read_launch(_tree(tmp_path, monkeypatch, CONVERT, {"convert_ckpt.py": reads}))
    assert "convert_ckpt.py:2 names WORLD_SIZE" in config.world_source["nproc_per_node"]


def test_a_launcher_command_comes_before_a_plain_python_one(tmp_path, monkeypatch):
    launch = "python convert_ckpt.py a b\ntorchrun --nproc-per-node 4 pretrain_gpt.py --pipeline-model-parallel-size 2\n"
    config = read_launch(_tree(tmp_path, monkeypatch, launch, {"convert_ckpt.py": CONVERT_PY}))
    assert config.launcher == "torchrun pretrain_gpt.py" and config.nproc_per_node == 4


@pytest.mark.parametrize("launch, said", [
    ("python missing.py --x 1\n", "line 1 runs `python missing.py`, whose entry is not read"),
    ("python -c 'import torch'\npython convert_ckpt.py a b\n", "could not be followed"),  # -c: not read
    ("$RUNNER\npython convert_ckpt.py a b\n", "not known statically"),
    # a module found nowhere here (`python -m pip` is pip, which installs and trains nothing)
    ("python -m prep_tools.shard a\npython convert_ckpt.py a b\n", "`python -m prep_tools.shard`"),
    # huggingface/nanotron@2411b022a7 examples/contributor-guide/debug_tiny_llama.sh: `python
    # debug_config_tiny_llama.py` writes the config, `debugpy-run -m torch.distributed.run` trains
    ("python convert_ckpt.py a b\ndebugpy-run -m torch.distributed.run -p 5678 -- --nproc_per_node=2 x.py\n",
     "line 2 runs `debugpy-run`, which starts a launcher"),
    # microsoft/Megatron-DeepSpeed@66f82d655f examples_deepspeed/universal_checkpointing/README.md:29,72:
    # the data step, then a training script not read
    ("python convert_ckpt.py a b\nbash $MDS/megatron_gpt/run_universal_bf16.sh\n",
     "line 2 runs `bash $MDS/megatron_gpt/run_universal_bf16.sh`, a script not read here"),
    ("python convert_ckpt.py a b\nssh $HEAD bash train.sh\n", "line 2 runs `ssh`, which is not followed"),
], ids=["missing-entry", "python-c", "unknown-command", "module-not-here", "launcher-inside", "script-not-read",
        "other-host"])
def test_a_plain_python_command_is_no_command_where_doubt_remains(capsys, tmp_path, monkeypatch, launch, said):
    code, doc = _scan(capsys, _tree(tmp_path, monkeypatch, launch, {"convert_ckpt.py": CONVERT_PY}))
    assert doc["verdict"]["status"] == "inconclusive" and code == 1
    assert said in doc["verdict"]["headline"]


def test_an_entry_not_read_is_no_proof_of_one_process(tmp_path, monkeypatch):
    """one_process.world alone: without the entry, whether it starts processes is unknown."""
    monkeypatch.chdir(tmp_path)
    config = LaunchConfig(path=str(tmp_path / "run.sh"), launcher="python gone.py", command_line=1, end_line=1)
    config.script = "gone.py"
    rule = next(e for e in Spelling.load(None).launchers if e.get("one_process"))
    world(config, rule, config.path)
    assert isinstance(config.nproc_per_node, Symbolic)
    assert config.world_source["nproc_per_node"].startswith("the entry is not read (gone.py is neither beside")


PISSA_PY = """import argparse

from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def main(args):
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(args.model), LoraConfig(init_lora_weights="pissa"))
    model.save_pretrained(args.out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--out")
    main(parser.parse_args())
"""


def test_one_process_on_a_package_no_rules_model_is_no_pipeline(capsys, tmp_path, monkeypatch):
    """LLaMA-Factory@ff6d4d12ee examples/extras/pissa/init.sh runs `python scripts/pissa_init.py`
    (peft, which no rules model): one rank has no peer, so the unknown package cannot make it a
    pipeline run; before, INCONCLUSIVE asked for a `record` of it."""
    script = _tree(tmp_path, monkeypatch, "python scripts/pissa_init.py --model m --out o\n",
                   {"scripts/pissa_init.py": PISSA_PY})
    code, doc = _scan(capsys, script)
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0, doc["verdict"]["headline"]
    assert "a single rank has no peer" in doc["verdict"]["headline"]
