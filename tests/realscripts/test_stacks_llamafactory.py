"""Issue 22 item 11: `llamafactory-cli train` (and its `lmf` alias) trains with LLaMA-Factory's
Hugging Face trainers unless USE_MCA or USE_MEGATRON_BRIDGE picks a Megatron backend
(hiyouga/LLaMA-Factory@ff6d4d12ee src/llamafactory/hparams/parser.py:395-407 get_train_args;
launcher.py:56). With neither switch set, by the script or by the environment the audit is run
in, the run is NOT A PIPELINE RUN (rules/llamafactory.toml); a switch on, or not known
statically, leaves the run to the Megatron readers as before.

The launches are written after that commit's examples/README.md:21 (`llamafactory-cli train
examples/train_lora/qwen3_lora_sft.yaml`), :146 (`FORCE_TORCHRUN=1 llamafactory-cli train ...`),
the `lmf` shortcut its USAGE names (launcher.py:33), and examples/train_lora/qwen3_lora_sft.sh
(a flag-only launch: `llamafactory-cli train --model_name_or_path ${MODEL_PATH} --stage sft ...`).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from auditor import cli, rulebook
from auditor.config.env_backend import judge_env_backend
from auditor.config.launch import parse_launch
from auditor.config.model import LaunchConfig

YAML = "model_name_or_path: Qwen/Qwen3-4B-Instruct-2507\nstage: sft\ndo_train: true\nfinetuning_type: lora\n"

README = "llamafactory-cli train examples/train_lora/qwen3_lora_sft.yaml\n"
FORCED = "FORCE_TORCHRUN=1 lmf train examples/train_lora/qwen3_lora_sft.yaml\n"
FLAGS = """#!/bin/bash
set -x
MODEL_PATH=Qwen/Qwen3-4B-Instruct-2507
llamafactory-cli train \\
    --model_name_or_path ${MODEL_PATH} \\
    --stage sft \\
    --do_train \\
    --finetuning_type lora \\
    --bf16
"""


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "examples" / "train_lora").mkdir(parents=True)
    (tmp_path / "examples" / "train_lora" / "qwen3_lora_sft.yaml").write_text(YAML, encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(text, encoding="utf-8")
    return script


def _scan(capsys, monkeypatch, tmp_path: Path, text: str) -> dict:
    monkeypatch.chdir(tmp_path)  # LLaMA-Factory's examples run from the checkout's root
    script = _write(tmp_path, text)
    cli.main(["scan", "--config", str(script), "--format", "json"])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("text", [README, FORCED, FLAGS], ids=["readme", "lmf-force-torchrun", "flags-only"])
def test_without_a_megatron_switch_it_is_not_a_pipeline_run(capsys, monkeypatch, tmp_path, text):
    monkeypatch.delenv("USE_MCA", raising=False)
    monkeypatch.delenv("USE_MEGATRON_BRIDGE", raising=False)
    doc = _scan(capsys, monkeypatch, tmp_path, text)
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
    assert "Hugging Face" in doc["verdict"]["headline"] and "USE_MCA" in doc["verdict"]["headline"]


@pytest.mark.parametrize("setting", ["export USE_MCA=1\n", "export USE_MEGATRON_BRIDGE=true\n",
                                     "export USE_MCA=$1\n"], ids=["mca", "bridge", "unknown"])
def test_a_switch_on_or_unknown_leaves_the_megatron_readers(tmp_path, setting):
    config = parse_launch(setting + README, str(_write(tmp_path, "")), environ={})
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)


def test_the_megatron_bridge_trainer_is_not_covered(capsys, monkeypatch, tmp_path):
    """USE_MEGATRON_BRIDGE (parser.py:399, asked after USE_MCA) runs Megatron-Bridge's pretrain on
    a config LLaMA-Factory builds itself (train/megatron_bridge/workflow.py:300-326)."""
    monkeypatch.delenv("USE_MCA", raising=False)
    doc = _scan(capsys, monkeypatch, tmp_path, "export USE_MEGATRON_BRIDGE=1\n" + README)
    assert doc["verdict"]["status"] == "not-covered", doc["verdict"]["headline"]
    assert "Megatron-Bridge" in doc["verdict"]["headline"]


def test_use_mca_is_asked_first(tmp_path):
    config = parse_launch("export USE_MCA=1 USE_MEGATRON_BRIDGE=1\n" + README, str(_write(tmp_path, "")), environ={})
    assert not any(d.kind in ("launch.not-pipeline", "launch.not-covered") for d in config.diagnostics)


def test_the_audits_environment_can_turn_it_on(tmp_path):
    """The job's environment (here the audit's own) sets USE_MCA: no longer the HF trainer."""
    path = str(_write(tmp_path, ""))
    assert any(d.kind == "launch.not-pipeline" for d in parse_launch(README, path, environ={}).diagnostics)
    config = parse_launch(README, path, environ={"USE_MCA": "1"})
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)


def test_a_switch_set_off_is_off(tmp_path):
    config = parse_launch("export USE_MCA=0\n" + README, str(_write(tmp_path, "")), environ={})
    assert any(d.kind == "launch.not-pipeline" for d in config.diagnostics)


def test_a_launcher_no_rule_names_is_left_alone():
    config = LaunchConfig(path="run.sh", launcher="torchrun train.py", command_line=1, end_line=1)
    judge_env_backend(config, "run.sh")
    assert config.diagnostics == []


def test_a_switch_assigned_but_not_exported_is_the_callers():
    """`USE_MCA=1` on a line of its own is not exported: the job's environment decides it."""
    config = parse_launch("USE_MCA=1\n" + README, "run.sh", environ={})
    assert not any(d.kind == "launch.not-pipeline" for d in config.diagnostics)


# --- the rule against the LLaMA-Factory code it quotes ---------------------------------------

RULE = rulebook.load("llamafactory").data["env_backend"][0]


def _switches(parser: str) -> set[str]:
    """The variables get_train_args asks is_env_enabled about."""
    tree = ast.parse(parser)
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_train_args")
    return {n.args[0].value for n in ast.walk(function) if isinstance(n, ast.Call)
            and getattr(n.func, "id", "") == "is_env_enabled" and isinstance(n.args[0], ast.Constant)}


@pytest.mark.wheels
@pytest.mark.parametrize("version", RULE["checked"])
def test_the_switches_pick_the_backend_in_each_checked_release(release, version):
    """get_train_args asks about no switch but the rule's; the HF path's trainers (train/sft, pt,
    dpo...) build no pipeline: no module outside the Megatron backends names DeepSpeed's pipeline
    module or torch's pipelining/P2P API."""
    root = Path(release(f"llamafactory=={version}").root)
    package = next(p.parent for p in sorted(root.rglob("llamafactory/__init__.py")))
    parser = (package / "hparams" / "parser.py").read_text(encoding="utf-8")
    assert _switches(parser) <= set(RULE["switches"])
    assert (RULE["code"] in parser) == ("USE_MCA" in _switches(parser))
    for module in package.rglob("*.py"):
        if {"mca", "megatron_bridge"} & set(module.relative_to(package).parts):
            continue
        text = module.read_text(encoding="utf-8")
        assert not [s for s in ("deepspeed.pipe", "PipelineModule", "torch.distributed.pipelining",
                                "batch_isend_irecv", "dist.send(", "dist.recv(") if s in text], module
