"""An entry the scan does not read is INCONCLUSIVE, never CLEAN on a framework's defaults
(auditor/config/entry_stack.py `unread_entry`, rules/stacks.toml `[unread_entry]`).

The constructs, written here after upstream scripts:
- `torchrun ... -m ${training_commands}`: OpenRLHF/OpenRLHF@3c3be6234e
  examples/scripts/train_nonrl_slurm.sh:38-40 (the module name comes from a file it reads at
  run time: not known statically);
- `deepspeed main.py ...`: microsoft/DeepSpeedExamples@83757d9c93
  training/imagenet/run_ds_fp16.sh:3, audited away from its directory (main.py not found);
- `torchrun pretrain_gpt.py`: NVIDIA/Megatron-LM's front end, known by its name to the rules
  (rules/megatron-lm.toml [[stage]] `launchers`), read as before where its path is not known
  statically or the run starts elsewhere (a `cd`); but NVIDIA/Megatron-LM core_v0.17.0
  examples/gpt3/train_gpt3_175b_distributed.sh's relative `torchrun ${DISTRIBUTED_ARGS[@]}
  pretrain_gpt.py ...` run from a folder of a checkout jobs are run from, without the file (no
  `cd`, no container; a `source` before it, which may make it, so not DOES NOT START) was read
  CLEAN on megatron-core's defaults: not read, so INCONCLUSIVE.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli

DS_MAIN = """import argparse
import deepspeed
import torch

parser = argparse.ArgumentParser()
parser = deepspeed.add_config_arguments(parser)
args = parser.parse_args()
model = torch.nn.Linear(4, 4)
engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
"""


def _scan(capsys, tmp_path: Path, launch: str, files: dict[str, str] | None = None) -> tuple[int, dict]:
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\n" + launch + "\n", encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("launch, said, decide", [
    ("torchrun --nproc_per_node 8 -m ${training_commands}", "not known statically", "--command"),
    ("torchrun --nproc_per_node 8 train.py --num-layers 4", "train.py is neither beside", "where train.py is"),
    ("torchrun --nproc_per_node 8 -m mypkg.train --num-layers 4", "mypkg/train.py is on no sys.path",
     "where mypkg/train.py is"),
    ("deepspeed main.py -a resnet50 --deepspeed --deepspeed_config ds.json", "main.py is neither beside",
     "where main.py is"),
])
def test_an_entry_not_read_is_inconclusive(capsys, tmp_path, monkeypatch, launch, said, decide):
    monkeypatch.chdir(tmp_path)
    code, doc = _scan(capsys, tmp_path, launch)
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    assert "is not read" in verdict["headline"] and said in verdict["headline"]
    assert decide in verdict["undecided"][0]["decide"]
    assert not doc["sites"]  # no verdict on a framework's defaults


def test_a_wrapper_starting_a_program_is_left_to_its_rules(capsys, tmp_path, monkeypatch):
    """`srun docker run ...` (NVIDIA/Megatron-LM@3bec9aa97d
    examples/multimodal/nvlm/sft_qwen20_72b_internvit_6b.sh's shape): docker is no Python entry."""
    monkeypatch.chdir(tmp_path)
    code, doc = _scan(capsys, tmp_path, "srun -N 2 docker run img python pretrain_vlm.py --num-layers 4")
    assert "is not read" not in doc["verdict"]["headline"]


def test_the_same_entry_read_beside_the_script_is_judged(capsys, tmp_path, monkeypatch):
    """The exception the rule keeps: main.py found where the job starts is read as before."""
    monkeypatch.chdir(tmp_path)
    code, doc = _scan(capsys, tmp_path, "deepspeed main.py --deepspeed --deepspeed_config ds.json",
                      {"main.py": DS_MAIN})
    assert "is not read" not in doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]


def test_a_front_end_known_by_name_is_judged_without_its_file(capsys, tmp_path, monkeypatch):
    """`pretrain_gpt.py` is Megatron-LM's front end by its name (the rules say so): the missing
    file does not make its stack unknown."""
    monkeypatch.chdir(tmp_path)
    code, doc = _scan(capsys, tmp_path, "torchrun --nproc_per_node 8 $MEGATRON/pretrain_gpt.py --num-layers 4")
    assert "is not read" not in doc["verdict"]["headline"]
    assert doc["sites"]


PRETRAIN = "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 4"


def _checkout(tmp_path: Path) -> None:
    """A checkout whose folder jobs are run from (it holds Python scripts), without the file."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "prepare_data.py").write_text("print('data')\n", encoding="utf-8")
    (tmp_path / "env.sh").write_text("export NCCL_DEBUG=WARN\n", encoding="utf-8")


def test_a_front_end_known_by_name_absent_where_the_job_starts_is_not_read(capsys, tmp_path, monkeypatch):
    """`source ./env.sh` may make the file (config/entry_absent.py: so not DOES NOT START)."""
    _checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, doc = _scan(capsys, tmp_path, "source ./env.sh\n" + PRETRAIN)
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    assert "the training script is not read (pretrain_gpt.py is neither beside" in verdict["headline"]
    assert "where pretrain_gpt.py is" in verdict["undecided"][0]["decide"]
    assert not doc["sites"]


@pytest.mark.heavy
@pytest.mark.parametrize("before, checkout", [
    ("source ./env.sh\ncd /opt/Megatron-LM\n", True),  # the job starts elsewhere
    ("source ./env.sh\ncd $MEGATRON_PATH && ", True),
    ("# run inside nvcr.io/nvidia/pytorch:24.05-py3\nsource ./env.sh\n", True),  # in a container
    ("source ./env.sh\n", False),  # no checkout around it: a Megatron-LM clone elsewhere
])
def test_a_front_end_known_by_name_started_elsewhere_keeps_its_reading(capsys, tmp_path, monkeypatch,
                                                                       before, checkout):
    if checkout:
        _checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, doc = _scan(capsys, tmp_path, before + PRETRAIN)
    assert "is not read" not in doc["verdict"]["headline"]
    assert doc["sites"]


def test_a_front_end_known_by_name_found_above_keeps_its_reading(capsys, tmp_path, monkeypatch):
    """The checkout's pretrain_gpt.py above the launch script's folder is the one read."""
    _checkout(tmp_path)
    (tmp_path / "pretrain_gpt.py").write_text("from megatron.training import pretrain\n", encoding="utf-8")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "tool.py").write_text("print(1)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "examples")
    code, doc = _scan(capsys, tmp_path / "examples", PRETRAIN)
    assert "is not read" not in doc["verdict"]["headline"]
