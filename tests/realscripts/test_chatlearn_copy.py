"""A copy of ChatLearn's entry point, and a `--config-file` the checkout surely lacks (issue 22
items 5 and 9).

The construct: alibaba/Pai-Megatron-Patch at commit a098ca5acbdeaf7172ce0393fa309b39a77506db ships
ChatLearn's entry as examples/qwen3/chatlearn_entrypoint.py (`from chatlearn.algorithm.base_algo
import BaseAlgorithm`, `class ChatlearnLauncher`, OmegaConf.load of `--config-file` at :99) and
examples/deepseek_v3/run_mcore_deepseek_chatlearn.sh runs, from examples/deepseek_v3,
`python ../qwen3/chatlearn_entrypoint.py grpo --config-file ../qwen3/configs/grpo_megatron.yaml
... models.policy_trainer.pipeline_model_parallel_size=16 ... 2>&1 | tee ${log_file}` (:43-89):
the tree holds examples/qwen3/chatlearn_configs/grpo_megatron.yaml, not configs/, so the entry
exits 1 before any worker starts. The copy is recognised by what it is (rules/chatlearn.toml
`script_copies`), the missing file is a certain stop only where it is absent from every
directory of the checkout the run may start in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.entry_copy import is_copy
from auditor.config.launch import parse_launch
from auditor.rulebook import files
from tests.realscripts.test_chatlearn import MEGATRON

COPY = """import argparse
from omegaconf import OmegaConf
from chatlearn.algorithm.base_algo import BaseAlgorithm


class ChatlearnLauncher:
    def run(self):
        OmegaConf.load("x")


if __name__ == "__main__":
    ChatlearnLauncher().run()
"""

RUN = """#!/bin/bash
set -x
export WORLD_SIZE=${{WORLD_SIZE:-1}}
log_file=/tmp/run.log
python {entry} grpo --config-file {config} \\
        runtime_args.train_backend=megatron \\
        models.policy_trainer.tensor_model_parallel_size=1 \\
        models.policy_trainer.pipeline_model_parallel_size=16 \\
        2>&1 | tee ${{log_file}} ; exit ${{PIPESTATUS[0]}}
"""


def pai_tree(root: Path, config: str, entry: str = "../qwen3/chatlearn_entrypoint.py",
             copy: str = COPY, marker: str = ".git") -> Path:
    """Pai-Megatron-Patch's shape: a git checkout, the copy and its configs under examples/qwen3,
    the run script under examples/deepseek_v3."""
    root.mkdir(parents=True, exist_ok=True)
    if marker == ".git":
        (root / marker).mkdir()
    else:
        (root / marker).write_text("")
    (root / "examples" / "qwen3" / "chatlearn_configs").mkdir(parents=True)
    (root / "examples" / "qwen3" / "chatlearn_entrypoint.py").write_text(copy)
    (root / "examples" / "qwen3" / "chatlearn_configs" / "grpo_megatron.yaml").write_text(MEGATRON)
    (root / "examples" / "deepseek_v3").mkdir()
    script = root / "examples" / "deepseek_v3" / "run_mcore_deepseek_chatlearn.sh"
    script.write_text(RUN.format(entry=entry, config=config))
    return script


def _read(script: Path):
    return parse_launch(script.read_text(), str(script))


def test_a_copy_of_the_entry_is_read_as_chatlearns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = pai_tree(tmp_path, "../qwen3/chatlearn_configs/grpo_megatron.yaml")
    monkeypatch.chdir(script.parent)  # README_chatlearn.md: run from the example's directory
    config = _read(script)
    assert config.launcher == "python entrypoint.py"
    assert config.flags["pipeline_model_parallel_size"].value == "16"
    (copy,) = [d for d in config.diagnostics if d.kind == "launch.entry-copy"]
    assert "ChatlearnLauncher" in copy.message
    assert not any(d.kind == "launch.config-file-missing" for d in config.diagnostics)


def test_a_script_of_that_name_that_is_no_copy_is_not_chatlearns(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Pai's verl_entrypoint.py has the name's shape but imports verl and defines no ChatlearnLauncher:
    a plain `python` command of its own (one process, config.one_process), not ChatLearn's entry."""
    script = pai_tree(tmp_path, "../qwen3/chatlearn_configs/grpo_megatron.yaml",
                      copy="import hydra\nfrom verl.trainer.main_ppo import run_ppo\n\ndef main():\n    run_ppo()\n")
    monkeypatch.chdir(script.parent)
    config = _read(script)
    assert config.launcher == "python chatlearn_entrypoint.py"
    assert not any(d.kind in ("launch.entry-copy", "launch.config-file-missing") for d in config.diagnostics)


@pytest.mark.parametrize("marker", [".git", ".gitmodules"])  # Pai's tree, as an archive holds it: .gitmodules only
def test_a_config_file_the_checkout_lacks_does_not_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         marker: str) -> None:
    script = pai_tree(tmp_path, "../qwen3/configs/grpo_megatron.yaml", marker=marker)
    monkeypatch.chdir(script.parent)
    config = _read(script)
    (stop,) = [d for d in config.diagnostics if d.kind == "launch.config-file-missing"]
    assert stop.severity == "error" and stop.detail == {"category": "config"}
    assert stop.where == f"{script}:5"
    assert "examples/qwen3/configs/grpo_megatron.yaml" in stop.message and "OmegaConf.load" in stop.message
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)  # and unknown, as before


@pytest.mark.parametrize("config, why", [
    ("../../../../../elsewhere/grpo.yaml", "outside the checkout"),
    ("chatlearn_configs/grpo_megatron.yaml", "there from examples/qwen3, where the entry's path also opens"),
])
def test_where_not_certain_it_stays_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           config: str, why: str) -> None:
    script = pai_tree(tmp_path / "c", config)
    monkeypatch.chdir(script.parent)
    read = _read(script)
    assert not any(d.kind == "launch.config-file-missing" for d in read.diagnostics), why
    assert any(d.kind == "launch.config-file-unread" for d in read.diagnostics), why


def test_a_copy_needs_the_name_the_imports_and_the_definition(tmp_path: Path) -> None:
    (launcher,) = files.load("chatlearn").data["launcher"]
    script = str(pai_tree(tmp_path, "x.yaml"))
    entry = "../qwen3/chatlearn_entrypoint.py"
    assert is_copy(launcher, entry, script)
    for name, text in [("renamed.py", COPY), ("a_entrypoint.py", COPY.replace("chatlearn.algorithm", "other")),
                       ("b_entrypoint.py", COPY.replace("ChatlearnLauncher", "Launcher"))]:
        (tmp_path / "examples" / "qwen3" / name).write_text(text)
        assert not is_copy(launcher, f"../qwen3/{name}", script), name
