"""NeMo 2 / Lightning launches (issue 22 items 9, 10): `coverage run [options] SCRIPT ARGS` in
front of a Python training script that builds `nl.MegatronStrategy(...)` and `nl.Trainer(...)`
from its own argparse flags; Lightning starts devices x num_nodes processes itself
(rules/nemo.toml, auditor/config/lightning_entry.py).

The scripts reproduce NVIDIA/NeMo at commit 8cfedd7203462cb251a914e700e5605444277561:
tests/functional_tests/L2_NeMo_2_GPT_SFT_TP1PP2_MBS2.sh (twice `coverage run -a
--data-file=... --source=... tests/collections/llm/gpt_finetuning.py --devices 2 --tp_size 1
--pp_size 2`, the second resuming) with gpt_finetuning.py (argparse `--devices` default 1,
`--tp_size`/`--pp_size` default 1, `nl.MegatronStrategy(tensor_model_parallel_size=args.tp_size,
pipeline_model_parallel_size=args.pp_size, ...)`, `nl.Trainer(devices=args.devices, ...)`), and
tests/functional_tests/L2_NeMo_2_GPT_Pretraining_no_transformer_engine.sh (`pip uninstall -y`
lines, then `--devices=2`) with megatron_gpt_pretraining.py (`nl.MegatronStrategy()`).
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from auditor.analysis.verdict import judge
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.bash.values import Symbolic
from auditor.config.launch import read_launch
from auditor.scan import ScanInputs, run_scan

FINETUNE = '''
import argparse

import torch
from megatron.core.optimizer import OptimizerConfig

from nemo import lightning as nl
from nemo.collections import llm


def get_args():
    parser = argparse.ArgumentParser(description='Finetune a small GPT model using NeMo 2.0')
    parser.add_argument('--restore_path', type=str, help="Path to model to be finetuned")
    parser.add_argument('--devices', type=int, default=1, help="number of devices")
    parser.add_argument('--max_steps', type=int, default=1, help="number of devices")
    parser.add_argument('--tp_size', type=int, default=1, help="tensor parallel size")
    parser.add_argument('--pp_size', type=int, default=1, help="pipeline parallel size")
    return parser.parse_args()


if __name__ == '__main__':
    args = get_args()
    strategy = nl.MegatronStrategy(
        tensor_model_parallel_size=args.tp_size,
        pipeline_model_parallel_size=args.pp_size,
        pipeline_dtype=torch.bfloat16,
        {extra}
    )
    trainer = nl.Trainer(
        devices=args.devices,
        max_steps=args.max_steps,
        accelerator="gpu",
        strategy=strategy,
        {callbacks}
    )
    llm.finetune(model=None, data=None, trainer=trainer)
'''
SFT = '''\
{export}coverage run -a --data-file=/workspace/.coverage --source=/workspace/nemo tests/collections/llm/gpt_finetuning.py \\
    --restore_path /home/TestData/nemo2_ckpt/llama_68M_v4 \\
    --devices 2 \\
    --max_steps 3 \\
    --tp_size 1 \\
    --pp_size {pp}

coverage run -a --data-file=/workspace/.coverage --source=/workspace/nemo tests/collections/llm/gpt_finetuning.py \\
    --restore_path /home/TestData/nemo2_ckpt/llama_68M_v4 \\
    --devices 2 \\
    --max_steps 6 \\
    --tp_size 1 \\
    --pp_size {pp}
'''
PRETRAIN = '''
import argparse

from nemo import lightning as nl


def get_args():
    parser = argparse.ArgumentParser(description='Train a small GPT model using NeMo 2.0')
    parser.add_argument('--devices', type=int, help="Number of devices to use for training")
    parser.add_argument('--max-steps', type=int, help="Number of steps to train for")
    return parser.parse_args()


if __name__ == '__main__':
    args = get_args()
    strategy = nl.MegatronStrategy()
    trainer = nl.Trainer(devices=args.devices, max_steps=args.max_steps, accelerator="gpu", strategy=strategy)
'''
NO_TE = '''\
pip uninstall -y apex ## TODO: remove when apex is no longer a dependency
pip uninstall -y transformer_engine

coverage run -a --data-file=/workspace/.coverage --source /workspace/nemo tests/collections/llm/megatron_gpt_pretraining.py \\
    --devices=2 \\
    --max-steps=3
'''


def _repo(tmp_path: Path, monkeypatch, entry: str, name: str, script: str) -> Path:
    """A NeMo checkout's layout: the launch script in tests/functional_tests/, the entry in
    tests/collections/llm/, run from the repository's root (as NeMo's CI runs it)."""
    (tmp_path / "tests" / "collections" / "llm").mkdir(parents=True)
    (tmp_path / "tests" / "functional_tests").mkdir(parents=True)
    (tmp_path / "tests" / "collections" / "llm" / name).write_text(dedent(entry))
    run = tmp_path / "tests" / "functional_tests" / "run.sh"
    run.write_text(script)
    monkeypatch.chdir(tmp_path)
    return Path("tests/functional_tests/run.sh")


def _sft(tmp_path, monkeypatch, pp="2", extra="", callbacks="", export=""):
    return _repo(tmp_path, monkeypatch, FINETUNE.format(extra=extra, callbacks=callbacks), "gpt_finetuning.py",
                 SFT.format(pp=pp, export=export))


def test_coverage_run_of_a_script_building_a_megatron_strategy_is_the_training_command(tmp_path, monkeypatch):
    launch = read_launch(_sft(tmp_path, monkeypatch))
    assert launch.launcher == "lightning gpt_finetuning.py"
    assert launch.wrapper[:2] == ["coverage", "run"] and launch.commands == 2
    assert launch.entry_values["pipeline_model_parallel_size"][0] == 2
    assert launch.entry_values["tensor_model_parallel_size"][0] == 1
    assert "gpt_finetuning.py:" in launch.entry_values["pipeline_model_parallel_size"][1]
    assert "--pp_size 2" in launch.entry_values["pipeline_model_parallel_size"][1]
    assert (launch.nproc_per_node, launch.nnodes, launch.world_size) == (2, 1, 2)


def test_argparse_defaults_and_the_strategy_defaults_fill_what_is_not_given(tmp_path, monkeypatch):
    """`nl.MegatronStrategy()` with defaults: PP 1 (the release's signature); `--devices=2`."""
    launch = read_launch(_repo(tmp_path, monkeypatch, PRETRAIN, "megatron_gpt_pretraining.py", NO_TE))
    assert launch.launcher == "lightning megatron_gpt_pretraining.py"
    assert launch.wrapper[:6] == ["coverage", "run", "-a", "--data-file=/workspace/.coverage", "--source",
                                  "/workspace/nemo"]
    assert launch.entry_values["pipeline_model_parallel_size"][0] == 1
    assert "leaves pipeline_model_parallel_size out" in launch.entry_values["pipeline_model_parallel_size"][1]
    assert launch.world_size == 2
    config = derive(launch, {"megatron-core": "0.17.0"}, None, "2.10.0")
    assert config.value("pipeline_model_parallel_size") == 1
    assert config.value("distributed_backend") == "nccl" and config.value("init_device_id_given") is False


def test_a_pp_flag_not_given_takes_the_argparse_default(tmp_path, monkeypatch):
    launch = read_launch(_repo(tmp_path, monkeypatch, FINETUNE.format(extra="", callbacks=""),
                               "gpt_finetuning.py", "python tests/collections/llm/gpt_finetuning.py --devices 4\n"))
    assert launch.entry_values["pipeline_model_parallel_size"][0] == 1
    assert "the default of --pp_size" in launch.entry_values["pipeline_model_parallel_size"][1]
    assert launch.world_size == 4


def test_the_comm_overlap_callback_leaves_batching_to_run_time(tmp_path, monkeypatch):
    """INVALID for the megatron-core default: MegatronCommOverlapCallback sets batch_p2p_comm
    from PP and VPP at run time, unless its own argument gives it."""
    callbacks = "callbacks=[MegatronCommOverlapCallback(tp_comm_overlap=False)],"
    entry = FINETUNE.format(extra="", callbacks=callbacks).replace(
        "from nemo import lightning as nl\n",
        "from nemo import lightning as nl\nfrom nemo.lightning.pytorch.callbacks.megatron_comm_overlap import MegatronCommOverlapCallback\n")
    launch = read_launch(_repo(tmp_path, monkeypatch, entry, "gpt_finetuning.py", SFT.format(pp="2", export="")))
    config = derive(launch, {"megatron-core": "0.17.0"}, None, "2.10.0")
    assert config.value("batch_p2p_comm") is not True
    assert any("leaves batch_p2p_comm out" in step for step in config.values["batch_p2p_comm"].history)


def test_a_strategy_size_not_known_statically_stays_unknown(tmp_path, monkeypatch):
    entry = FINETUNE.format(extra="", callbacks="").replace("pipeline_model_parallel_size=args.pp_size",
                                                            "pipeline_model_parallel_size=pick()")
    launch = read_launch(_repo(tmp_path, monkeypatch, entry, "gpt_finetuning.py", SFT.format(pp="2", export="")))
    config = derive(launch, {"megatron-core": "0.17.0"}, None, "2.10.0")
    assert config.value("pipeline_model_parallel_size") is UNKNOWN
    assert "not known statically" in launch.entry_values["pipeline_model_parallel_size"][1]


def test_a_python_script_building_no_strategy_is_no_one_process_run(tmp_path, monkeypatch):
    """A script that builds no known strategy is a plain `python SCRIPT` (config/one_process.py),
    but it imports nemo, whose Lightning Trainer starts the processes: the world is unknown."""
    entry = FINETUNE.format(extra="", callbacks="").replace("nl.MegatronStrategy(", "dict(")
    launch = read_launch(_repo(tmp_path, monkeypatch, entry, "gpt_finetuning.py", SFT.format(pp="2", export="")))
    assert launch.launcher == "python gpt_finetuning.py" and isinstance(launch.nproc_per_node, Symbolic)
    why = launch.world_source["nproc_per_node"]  # the script's two python commands, or nemo's own
    assert "imports nemo" in why or "`python` commands" in why, why  # processes: the world is unknown


def test_coverage_run_module_is_python_m(tmp_path):
    from auditor.config.launch import parse_launch
    config = parse_launch("coverage run --rcfile .coveragerc -m torch.distributed.run --nproc_per_node 2 "
                          "pretrain_gpt.py --pipeline-model-parallel-size 2\n", "run.sh")
    assert config.launcher == "python -m torch.distributed.run pretrain_gpt.py" and config.world_size == 2


@pytest.mark.parametrize("export,torch,status", [
    ("", "2.10.0", "clean"),  # batch_p2p_comm True (megatron-core's default), coalesced
    ("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n", "2.10.0", "findings"),  # DETAIL un-batches on 2.10
    ("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n", "2.11.0", "clean"),
])
def test_each_command_is_judged_at_pp2(tmp_path, monkeypatch, export, torch, status):
    doc = run_scan(ScanInputs(str(_sft(tmp_path, monkeypatch, export=export)),
                              targets=["megatron-core==0.17.0"], torch_version=torch, jobs=1))
    assert judge(doc).status == status, doc["verdict"]["headline"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2


@pytest.mark.parametrize("devices,world", [("[0, 1, 2]", 3), ("'auto'", None), ("pick()", None)])
def test_the_world_is_the_trainer_s_devices(tmp_path, monkeypatch, devices, world):
    """A list of device indices is its length; "auto" (every visible GPU) and a value not known
    statically leave the world unknown, never 1."""
    entry = FINETUNE.format(extra="", callbacks="").replace("devices=args.devices", f"devices={devices}")
    launch = read_launch(_repo(tmp_path, monkeypatch, entry, "gpt_finetuning.py", SFT.format(pp="2", export="")))
    assert launch.world_size == world
    assert "gpt_finetuning.py" in launch.world_source["nproc_per_node"]
