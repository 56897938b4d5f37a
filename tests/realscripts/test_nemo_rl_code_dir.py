"""Issue 22 (nemorl-super-omni-gym-grpo): a launch script that finds its checkout's root as
`CODE_DIR="$(cd "${SCRIPT_DIR}/../../.." && pwd)"` and runs from there (`cd "${CODE_DIR}"`)
opens the relative `--config` from that root, so the config is read from the checkout, not left
unknown; a `cd` to a directory not known statically still leaves it unread (the run is then judged
at each value it may set: tests/realscripts/test_nemo_rl_any_config.py).

Written after NVIDIA-NeMo/RL examples/nemo_gym/nemotron-3-super-omni/super_omni_launch.sh (commit
7ea279abfbeb698b092856d0dab61e7cf39bc909) :15-17 (SCRIPT_DIR from `${BASH_SOURCE[0]}`, CODE_DIR
three levels up, `cd "${CODE_DIR}"`) and :35 (`CONFIG_PATH="${CONFIG_PATH:-examples/configs/
recipes/...yaml}"`), its command :168-169 (`uv run --no-sync ./${ENTRYPOINT} --config
${CONFIG_PATH}`); the config after examples/configs/grpo_math_1B.yaml (policy.megatron_cfg /
policy.dtensor_cfg switches, pipeline_model_parallel_size).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli

CONFIG = """policy:
  dtensor_cfg:
    enabled: false
  megatron_cfg:
    enabled: true
    pipeline_model_parallel_size: {pp}
cluster:
  gpus_per_node: 8
  num_nodes: 2
"""
SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
CODE_DIR="$(cd "${{SCRIPT_DIR}}/../../.." && pwd)"
cd "{cd}"
CONFIG_PATH="${{CONFIG_PATH:-examples/configs/recipes/grpo-megatron.yaml}}"
ENTRYPOINT="${{ENTRYPOINT:-examples/nemo_gym/run_grpo_nemo_gym.py}}"
uv run --no-sync ./${{ENTRYPOINT}} --config ${{CONFIG_PATH}} logger.wandb_enabled=True
"""


def _scan(capsys, tmp_path: Path, pp: int, cd: str = "${CODE_DIR}", *more: str) -> dict:
    (tmp_path / "examples" / "configs" / "recipes").mkdir(parents=True)
    (tmp_path / "examples" / "configs" / "recipes" / "grpo-megatron.yaml").write_text(
        CONFIG.format(pp=pp), encoding="utf-8")
    (tmp_path / "examples" / "nemo_gym" / "super").mkdir(parents=True)
    (tmp_path / "examples" / "nemo_gym" / "run_grpo_nemo_gym.py").write_text("", encoding="utf-8")
    script = tmp_path / "examples" / "nemo_gym" / "super" / "launch.sh"
    script.write_text(SCRIPT.format(cd=cd), encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json", *more])
    return json.loads(capsys.readouterr().out)


def assert_read_at(doc: dict, pp: int) -> None:
    """The recipe grpo-megatron.yaml was read: at PP 1 the Megatron policy is CLEAN, at PP > 1 the
    size comes from the file."""
    if pp == 1:
        assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
        assert "Megatron backend at pipeline_model_parallel_size 1" in doc["config"]["provenance"][
            "pipeline_model_parallel_size"]
    else:
        assert doc["config"]["effective"]["pipeline_model_parallel_size"] == pp, doc["verdict"]["headline"]
        assert "grpo-megatron.yaml" in doc["config"]["provenance"]["pipeline_model_parallel_size"]


@pytest.mark.parametrize("pp", [1, 2])
def test_the_config_is_read_from_the_checkout_root_the_script_finds(capsys, tmp_path, pp):
    doc = _scan(capsys, tmp_path, pp)
    assert_read_at(doc, pp)


def _unread(doc: dict) -> str:
    """What the scan says of a config it did not read: the run is undecided, naming the config
    (it may set the workers' env_vars or model_overrides: tests/realscripts/test_nemo_rl_env_vars.py)."""
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    return str(doc["verdict"]["headline"])


def test_a_cd_to_a_directory_not_known_leaves_the_config_unread(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, 1, "$(bash make_snapshot.sh)", "--set", "pipeline_model_parallel_size=1")
    assert "is not read: the directory the command runs in is not known statically" in _unread(doc)


def test_a_root_above_the_checkout_is_not_guessed(capsys, tmp_path):
    """`cd` to a directory not here fails (`&& pwd` prints nothing) or may exist on the cluster:
    not known, so the config stays unread."""
    doc = _scan(capsys, tmp_path, 1, "$(cd \"${SCRIPT_DIR}/no/such/dir\" && pwd)",
                "--set", "pipeline_model_parallel_size=1")
    assert "is not read: the directory the command runs in is not known statically" in _unread(doc)
