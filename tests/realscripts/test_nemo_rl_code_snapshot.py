"""Issue 22 (nemorl-super-omni-gym-grpo): a launch script that runs its command from a copy of
its checkout made by the checkout's own snapshot tool, `SNAPSHOT_DIR=$(realpath "$(bash
"${CODE_DIR}/tools/code_snapshot.sh" "${EXP_NAME}")")` then `cd "${SNAPSHOT_DIR}"`, opens the
relative `--config` in that copy, whose files are the checkout's git-tracked ones (rules/nemo-rl.toml
[[checkout_copy]]): the config is read from the checkout. A script of that name that is not the
rules' tool (it lacks what the copy is made with) still leaves the directory unknown.

Written after NVIDIA-NeMo/RL examples/nemo_gym/nemotron-3-super-omni/super_omni_launch.sh (commit
7ea279abfbeb698b092856d0dab61e7cf39bc909) :15-17 (CODE_DIR the checkout's root), :35 (the
default CONFIG_PATH), :123-129 (the snapshot, refreshed, then `cd "${SNAPSHOT_DIR}"`), :168-169
(`uv run --no-sync ./${ENTRYPOINT} --config ${CONFIG_PATH}`), and tools/code_snapshot.sh :5-7,
:26-44 of that commit (the tracked files rsync'd into $PROJECT_ROOT/code_snapshots/$EXP_NAME,
whose path it echoes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from auditor import cli, rulebook
from tests.realscripts.test_nemo_rl_code_dir import assert_read_at

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
# The tool as the checkout ships it (tools/code_snapshot.sh at the commit above, abridged).
SNAPSHOT_TOOL = """#!/bin/bash
set -euo pipefail
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)
PROJECT_ROOT=${SCRIPT_DIR}/..
cd ${PROJECT_ROOT}
EXP_NAME=$1
CODE_SNAPSHOT_DIRNAME=${CODE_SNAPSHOT_DIRNAME:-code_snapshots}
SNAPSHOT_DIR="$PROJECT_ROOT/${CODE_SNAPSHOT_DIRNAME}/${EXP_NAME}"
if [[ ! -d "$SNAPSHOT_DIR" ]]; then
  mkdir -p $SNAPSHOT_DIR
else
  echo ${SNAPSHOT_DIR}
  exit
fi
rsync -a --files-from=<(
  git ls-files --recurse-submodules --cached --full-name
) ./ $SNAPSHOT_DIR/
echo ${SNAPSHOT_DIR}
"""
# Another project's script of the same name: it prints a directory of its own choosing.
OTHER_TOOL = """#!/bin/bash
mkdir -p /scratch/$1 && echo /scratch/$1
"""
SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CODE_DIR="$(cd "${SCRIPT_DIR}/../../.." && pwd)"
cd "${CODE_DIR}"
export EXP_NAME="${EXP_NAME:-grpo-omni}"
CONFIG_PATH="${CONFIG_PATH:-examples/configs/recipes/grpo-megatron.yaml}"
ENTRYPOINT="${ENTRYPOINT:-examples/nemo_gym/run_grpo_nemo_gym.py}"
SNAPSHOT_DIR=$(realpath "$(bash "${CODE_DIR}/tools/code_snapshot.sh" "${EXP_NAME}")")
cd "${SNAPSHOT_DIR}"
uv run --no-sync ./${ENTRYPOINT} --config ${CONFIG_PATH} logger.wandb_enabled=True
"""


def _scan(capsys, tmp_path: Path, pp: int, tool: str = SNAPSHOT_TOOL) -> dict:
    (tmp_path / "examples" / "configs" / "recipes").mkdir(parents=True)
    (tmp_path / "examples" / "configs" / "recipes" / "grpo-megatron.yaml").write_text(
        CONFIG.format(pp=pp), encoding="utf-8")
    (tmp_path / "examples" / "nemo_gym" / "omni").mkdir(parents=True)
    (tmp_path / "examples" / "nemo_gym" / "run_grpo_nemo_gym.py").write_text("", encoding="utf-8")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "code_snapshot.sh").write_text(tool, encoding="utf-8")
    script = tmp_path / "examples" / "nemo_gym" / "omni" / "launch.sh"
    script.write_text(SCRIPT, encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json"])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("pp", [1, 2])
def test_the_config_is_read_from_the_checkout_the_snapshot_copies(capsys, tmp_path, pp):
    doc = _scan(capsys, tmp_path, pp)
    assert_read_at(doc, pp)


def test_a_script_of_that_name_that_copies_nothing_is_not_followed(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, 1, OTHER_TOOL)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "the directory the command runs in is not known statically" in doc["verdict"]["headline"]


# The corpus copy of the checkout (benchmarks/real_scripts/fetch.py), or one named here.
CHECKOUT = Path(os.environ.get("P2PAUDIT_NEMO_RL_CHECKOUT", "/work/upstream/real_scripts/NVIDIA-NeMo+RL@7ea279abfb"))


@pytest.mark.skipif(not (CHECKOUT / "tools" / "code_snapshot.sh").is_file(), reason="the NeMo-RL checkout is not here")
def test_the_rule_reads_the_checkouts_tool():
    """The lines the rule recognises the tool by are in it, and its root is where it copies from."""
    copy = rulebook.load("nemo-rl").data["checkout_copy"][0]
    tool = (CHECKOUT / copy["script"]).read_text(encoding="utf-8")
    assert all(mark in tool for mark in copy["marks"])
    assert f"PROJECT_ROOT=${{SCRIPT_DIR}}/{copy['root']}" in tool


@pytest.mark.skipif(not (CHECKOUT / "nemo_rl/models/megatron/setup.py").is_file(),
                    reason="the NeMo-RL checkout's megatron code is not here")
def test_model_overrides_come_before_the_pipeline_size():
    """setup.py: the overrides are checked against megatron_cfg's own fields and merged, then
    pipeline_model_parallel_size is set from megatron_cfg (rules/nemo-rl.toml, above `what`)."""
    setup = (CHECKOUT / "nemo_rl/models/megatron/setup.py").read_text(encoding="utf-8")
    checked = setup.index("_validate_model_override_conflicts(config[\"megatron_cfg\"], model_overrides)")
    merged = setup.index("model_cfg = _merge_model_overrides(model_cfg, model_overrides)")
    sized = setup.index("    _apply_parallelism_config(model_cfg, config)")
    assert checked < merged < sized
    assert "model_cfg.pipeline_model_parallel_size = config[\"megatron_cfg\"][" in setup
