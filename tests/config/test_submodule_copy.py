"""A framework imported from a git submodule of the checkout that is not checked out here, where
the release judged in its stead lacks a module the entry imports: undecided, naming the
submodule to check out (auditor/config/submodule_copy.py).

Written after alibaba/Pai-Megatron-Patch@a098ca5acbdeaf7172ce0393fa309b39a77506db
examples/qwen2_5/run_mcore_qwen.sh:3-6 (CURRENT_DIR from `dirname "$0"`, MEGATRON_PATCH_PATH two
folders up, `export PYTHONPATH=${MEGATRON_PATCH_PATH}:${MEGATRON_PATCH_PATH}/backends/megatron/
Megatron-LM-250328:$PYTHONPATH`) and its .gitmodules, which names backends/megatron/Megatron-LM-*
as submodules a plain clone leaves empty. The entry imports a module of the submodule's Megatron
that megatron-core 0.17.0 lacks: CLEAN before, judged on that release as if it were the run's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.config.launch import read_launch
from auditor.config.submodule_copy import unread_submodule
from auditor.sources import resolve

SUBMODULE = "backends/megatron/Megatron-LM-250328"
GITMODULES = f"""[submodule "{SUBMODULE}"]
\tpath = {SUBMODULE}
\turl = https://github.com/NVIDIA/Megatron-LM.git
"""
RUN_SH = """#!/bin/bash
# megatron-core==0.17.0 torch==2.10.0
CURRENT_DIR="$( cd "$( dirname "$0" )" && pwd )"
MEGATRON_PATCH_PATH=$( dirname $( dirname ${CURRENT_DIR}))
export PYTHONPATH=${MEGATRON_PATCH_PATH}:PATHS:$PYTHONPATH
torchrun --nproc_per_node 8 pretrain_qwen.py --pipeline-model-parallel-size 4 --num-layers 8
"""
PRETRAIN = """from megatron.core.enums import ModelType
from megatron.core.models.omni_only_here import OmniModel
from megatron.training import pretrain


def model_provider(pre_process=True, post_process=True):
    return OmniModel()


if __name__ == "__main__":
    pretrain(None, model_provider, ModelType.encoder_or_decoder, None)
"""


def _checkout(tmp_path: Path, paths: str = "${MEGATRON_PATCH_PATH}/" + SUBMODULE, pretrain: str = PRETRAIN) -> Path:
    (tmp_path / ".gitmodules").write_text(GITMODULES, encoding="utf-8")
    (tmp_path / SUBMODULE).mkdir(parents=True)  # as a plain clone leaves it: empty
    (tmp_path / "examples" / "qwen").mkdir(parents=True)
    (tmp_path / "examples" / "qwen" / "pretrain_qwen.py").write_text(pretrain, encoding="utf-8")
    script = tmp_path / "examples" / "qwen" / "run_mcore_qwen.sh"
    script.write_text(RUN_SH.replace("PATHS", paths), encoding="utf-8")
    return script


def _scan(capsys, monkeypatch, script: Path) -> tuple[int, dict]:
    monkeypatch.chdir(script.parent)
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_module_only_the_submodule_holds_is_undecided(capsys, monkeypatch, tmp_path):
    code, doc = _scan(capsys, monkeypatch, _checkout(tmp_path))
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    [said] = [f for f in doc["findings"] if f["kind"] == "launch.submodule-unread"]
    assert "`megatron.core.models.omni_only_here` (" in said["message"] and "megatron-core 0.17.0" in said["message"]
    assert f"`git submodule update --init {SUBMODULE}` in {tmp_path.resolve()}" in verdict["headline"]


@pytest.mark.parametrize("change", [
    {"pretrain": PRETRAIN.replace("models.omni_only_here import OmniModel", "models.gpt import GPTModel as OmniModel")},
    {"paths": "${MEGATRON_PATCH_PATH}/backends/megatron/another"},  # not the submodule
    # Megatron-LM's tokenizers, which the wheels' partial megatron/training lacks (Pai's
    # toolkits/distributed_checkpoints_convertor imports megatron.training.tokenizer.tokenizer)
    {"pretrain": PRETRAIN.replace("megatron.core.models.omni_only_here import OmniModel",
                                  "megatron.training.tokenizer import build_tokenizer as OmniModel")},
])
def test_a_release_that_holds_the_imports_stands_in(capsys, monkeypatch, tmp_path, change):
    """Every module the entry imports of what the release stands in for whole (megatron.core) is
    in it, or the run's copy is no submodule of the checkout (the caller's Megatron, as Pai's
    $2): the release stands in, as before."""
    code, doc = _scan(capsys, monkeypatch, _checkout(tmp_path, **change))
    assert not any(f["kind"] == "launch.submodule-unread" for f in doc["findings"])


def test_a_checked_out_submodule_is_read_not_named(tmp_path, monkeypatch):
    """Checked out, the submodule is a root read here (config/entry_imports.py judges its copy)."""
    script = _checkout(tmp_path)
    (tmp_path / SUBMODULE / "megatron" / "core").mkdir(parents=True)
    for name in ("megatron/__init__.py", "megatron/core/__init__.py"):
        (tmp_path / SUBMODULE / name).write_text("", encoding="utf-8")
    monkeypatch.chdir(script.parent)
    assert unread_submodule(read_launch(script), [resolve("megatron-core==0.17.0")]) == []
