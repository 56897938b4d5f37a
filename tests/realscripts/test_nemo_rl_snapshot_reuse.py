"""Issue 22, review of the NeMo-RL snapshot reading (rules/nemo-rl.toml [[checkout_copy]]): the
directory tools/code_snapshot.sh prints is the checkout's copy only where the tool makes one.

NVIDIA-NeMo/RL tools/code_snapshot.sh (commit 7ea279abfbeb698b092856d0dab61e7cf39bc909) :24-35:
SNAPSHOT_DIR="$PROJECT_ROOT/${CODE_SNAPSHOT_DIRNAME}/${EXP_NAME}" is echoed as it is where it
exists ("Using existing code snapshot"), copied from the checkout only where it does not. The
launch script is written after examples/nemo_gym/nemotron-3-super/super_launch.sh :5 (EXP_NAME
required), :117 (the tool) and :128 (`cd "${SNAPSHOT_DIR}"`) of that commit, and
nemotron-3-super-omni/super_omni_launch.sh :19 (EXP_NAME's default).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import cli

from tests.realscripts.test_nemo_rl_code_snapshot import CONFIG
from tests.realscripts.test_nemo_rl_code_snapshot import SNAPSHOT_TOOL as TOOL  # the checkout's tool

SCRIPT = """#!/bin/bash
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
CODE_DIR="$(cd "${{SCRIPT_DIR}}/../.." && pwd)"
{exp}
SNAPSHOT_DIR=$(realpath "$(bash "${{CODE_DIR}}/tools/code_snapshot.sh" "${{EXP_NAME}}")")
cd "${{SNAPSHOT_DIR}}"
uv run python examples/run_grpo.py --config {config}
"""
DEFAULT_EXP = 'EXP_NAME="${EXP_NAME:-exp1}"'


def _checkout(root: Path, exp: str = DEFAULT_EXP, config: str = "examples/configs/c.yaml") -> Path:
    (root / "examples" / "configs").mkdir(parents=True)
    (root / "examples" / "configs" / "c.yaml").write_text(CONFIG.format(pp=1), encoding="utf-8")
    (root / "examples" / "run_grpo.py").write_text("", encoding="utf-8")
    (root / "tools").mkdir()
    (root / "tools" / "code_snapshot.sh").write_text(TOOL, encoding="utf-8")
    (root / "examples" / "super").mkdir()
    script = root / "examples" / "super" / "launch.sh"
    script.write_text(SCRIPT.format(exp=exp, config=config), encoding="utf-8")
    return script


def _scan(capsys, script: Path) -> dict:
    cli.main(["scan", "--config", str(script), "--format", "json"])
    return json.loads(capsys.readouterr().out)


def test_a_kept_snapshot_is_read_as_it_is(capsys, tmp_path):
    """code_snapshots/exp1 kept from an earlier run (at PP 2) is what the command opens."""
    script = _checkout(tmp_path)
    kept = tmp_path / "code_snapshots" / "exp1" / "examples" / "configs"
    kept.mkdir(parents=True)
    (kept / "c.yaml").write_text(CONFIG.format(pp=2), encoding="utf-8")
    (kept.parent / "run_grpo.py").write_text("", encoding="utf-8")
    doc = _scan(capsys, script)
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2, doc["verdict"]["headline"]


def test_with_no_snapshot_kept_the_checkout_is_read(capsys, tmp_path):
    doc = _scan(capsys, _checkout(tmp_path))
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]


def test_an_unknown_snapshot_name_leaves_the_directory_unknown(capsys, tmp_path):
    """EXP_NAME from the environment only (super_launch.sh:5): which snapshot is not known."""
    doc = _scan(capsys, _checkout(tmp_path, exp=': "${EXP_NAME:?EXP_NAME is required}"'))
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "the directory the command runs in is not known statically" in doc["verdict"]["headline"]


def test_a_path_that_leaves_the_copy_is_not_read_beside_the_checkout(capsys, tmp_path):
    """`--config ../configs/pp4.yaml` from the copy opens code_snapshots/configs/pp4.yaml, not a
    file beside the checkout."""
    root = tmp_path / "RL"
    root.mkdir()
    script = _checkout(root, config="../configs/pp4.yaml")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "pp4.yaml").write_text(CONFIG.format(pp=4), encoding="utf-8")
    doc = _scan(capsys, script)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "outside the copy of the checkout" in doc["verdict"]["headline"]


def test_a_fifo_at_the_tools_path_is_not_waited_on(tmp_path):
    """A FIFO where the tool should be: never opened (the scan would wait for a writer)."""
    script = _checkout(tmp_path)
    (tmp_path / "tools" / "code_snapshot.sh").unlink()
    os.mkfifo(tmp_path / "tools" / "code_snapshot.sh")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json"],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    doc = json.loads(done.stdout)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]


def test_a_parent_config_that_leaves_the_copy_is_not_read_beside_the_checkout(capsys, tmp_path):
    """load_config_with_inheritance opens `defaults:` relative to the child (nemo_rl/utils/config.py
    at the commit above): from the copy, `../../../configs/base.yaml` is beside the copy."""
    root = tmp_path / "RL"
    root.mkdir()
    script = _checkout(root)
    (root / "examples" / "configs" / "c.yaml").write_text(
        'defaults: "../../../configs/base.yaml"\n' + CONFIG.format(pp=1).replace(
            "    pipeline_model_parallel_size: 1\n", ""), encoding="utf-8")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "base.yaml").write_text(
        "policy:\n  megatron_cfg:\n    pipeline_model_parallel_size: 1\n", encoding="utf-8")
    doc = _scan(capsys, script)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "outside the copy of the checkout" in doc["verdict"]["headline"]


def test_a_fifo_as_a_parent_config_is_not_waited_on(tmp_path):
    script = _checkout(tmp_path)
    (tmp_path / "examples" / "configs" / "c.yaml").write_text('defaults: "base.yaml"\n', encoding="utf-8")
    os.mkfifo(tmp_path / "examples" / "configs" / "base.yaml")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json"],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert json.loads(done.stdout)["verdict"]["status"] == "inconclusive"


@pytest.mark.parametrize("folder, pp", [("export CODE_SNAPSHOT_DIRNAME=snaps", 2),
                                        ("CODE_SNAPSHOT_DIRNAME=snaps", 1),  # not exported: the tool's default
                                        ("export CODE_SNAPSHOT_DIRNAME=", 1),  # empty: the default too
                                        ('export CODE_SNAPSHOT_DIRNAME="$(hostname)"', None)])
def test_the_folder_is_the_one_the_tool_sees(capsys, tmp_path, folder, pp):
    """tools/code_snapshot.sh:24 `CODE_SNAPSHOT_DIRNAME=${CODE_SNAPSHOT_DIRNAME:-code_snapshots}`,
    read from the tool's environment (the usage line :19 sets it before `bash`)."""
    script = _checkout(tmp_path, exp=DEFAULT_EXP + "\n" + folder)
    kept = tmp_path / "snaps" / "exp1" / "examples" / "configs"
    kept.mkdir(parents=True)
    (kept / "c.yaml").write_text(CONFIG.format(pp=2), encoding="utf-8")
    doc = _scan(capsys, script)
    if pp is None:
        assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    else:
        assert doc["config"]["effective"]["pipeline_model_parallel_size"] == pp, doc["verdict"]["headline"]
