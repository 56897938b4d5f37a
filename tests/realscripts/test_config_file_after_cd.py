"""A config file the checkout lacks is a certain stop only where the run starts in a directory
of that checkout: after a `cd` to a path the script does not state, the launch directory may be
another tree that holds the file (review h30 hole 4).

The construct: a launch script that runs `cd "${MEGATRON_PATH}"` and then
`torchrun pretrain_gpt.py --yaml-cfg examples/gpt3/gpt_config.yaml`, the file lying in the
Megatron-LM checkout the cluster holds (NVIDIA/Megatron-LM core_v0.17.0 9539a12e1b04 opens it in
parse_args, megatron/training/yaml_arguments.py:418); Pai-Megatron-Patch
(alibaba/Pai-Megatron-Patch a098ca5acb examples/deepseek_v3/run_mcore_deepseek_chatlearn.sh:21)
runs `cd` only inside `$( cd "$( dirname "$0" )" && pwd )`, which leaves its directory as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import parse_launch, read_launch
from tests.realscripts.test_chatlearn_copy import pai_tree


def _megatron_tree(root: Path, before: str) -> Path:
    (root / "scripts").mkdir(parents=True)
    (root / "setup.py").write_text("")
    (root / "pretrain_gpt.py").write_text("from megatron.training import pretrain\n")
    script = root / "scripts" / "run.sh"
    script.write_text(f"#!/bin/bash\n{before}\n"
                      "torchrun --nproc_per_node 8 pretrain_gpt.py --yaml-cfg examples/gpt3/gpt_config.yaml\n")
    return script


def _kinds(diagnostics: list) -> set[str]:
    return {d.kind for d in diagnostics}


def test_a_yaml_cfg_after_a_cd_to_an_unknown_directory_stays_unknown(tmp_path: Path) -> None:
    kinds = _kinds(read_launch(_megatron_tree(tmp_path, 'cd "${MEGATRON_PATH}"')).diagnostics)
    assert "launch.config-file-missing" not in kinds and "launch.config-file-unread" in kinds


def test_without_a_cd_it_is_still_a_certain_stop(tmp_path: Path) -> None:
    kinds = _kinds(read_launch(_megatron_tree(tmp_path, "set -x")).diagnostics)
    assert "launch.config-file-missing" in kinds


def test_a_config_file_after_a_cd_stays_unknown_for_chatlearn(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    script = pai_tree(tmp_path, "../qwen3/configs/grpo_megatron.yaml")
    script.write_text(script.read_text().replace("set -x\n", 'set -x\ncd "${CHATLEARN_ROOT}"\n'))
    monkeypatch.chdir(script.parent)
    kinds = _kinds(parse_launch(script.read_text(), str(script)).diagnostics)
    assert "launch.config-file-missing" not in kinds and "launch.config-file-unread" in kinds


def test_a_cd_inside_a_command_substitution_keeps_the_stop(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    script = pai_tree(tmp_path, "../qwen3/configs/grpo_megatron.yaml")
    script.write_text(script.read_text().replace(
        "set -x\n", 'set -x\nCURRENT_DIR="$( cd "$( dirname "$0" )" && pwd )"\n'))
    monkeypatch.chdir(script.parent)
    assert "launch.config-file-missing" in _kinds(parse_launch(script.read_text(), str(script)).diagnostics)
