"""Issue 22 (nemorl-super-gym-launch, nemorl-super-omni-gym-grpo): NeMo-RL's Megatron policy runs
megatron-core's schedules on the TransformerConfig Megatron-Bridge's provider gives, and NeMo-RL's
code sets neither batch_p2p_comm nor overlap_p2p_comm (rules/nemo-rl.toml), so at two or more
stages the run is judged on megatron-core's defaults. Policy `model_overrides`, which may set any
TransformerConfig field, stay NOT COVERED. A config the scan cannot read (the caller's `--config
${CONFIG_PATH}`) may set env_vars and model_overrides too: test_nemo_rl_env_vars.py.

Written after NVIDIA-NeMo/RL examples/nemo_gym/nemotron-3-super/super_launch.sh (commit
7ea279abfbeb698b092856d0dab61e7cf39bc909) :8 (`: "${CONFIG_PATH:?CONFIG_PATH is required}"`) and
:160-161 (`python ./examples/nemo_gym/run_grpo_nemo_gym.py --config ${CONFIG_PATH}`); the run
script's imports after examples/nemo_gym/run_grpo_nemo_gym.py; the config after
examples/nemo_gym/nemotron-3-super/stage1_rlvr.yaml (policy.megatron_cfg.enabled: true,
pipeline_model_parallel_size) and nemo_rl/models/megatron/setup.py:662 (`model_overrides`).
"""

from __future__ import annotations

import json
from pathlib import Path

from auditor import cli

RUN = """import argparse

from nemo_rl.models.megatron.setup import setup


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=str, default=None)
    args, overrides = parser.parse_known_args()
    setup(args.config)


if __name__ == "__main__":
    main()
"""
# nemo_rl/models/megatron/setup.py:863 (_apply_parallelism_config): the size NeMo-RL's own code
# copies from the config, which the front end reads (not the run script's argparse).
SETUP = """from megatron.bridge import AutoBridge


def setup(config):
    model_cfg = object()
    model_cfg.pipeline_model_parallel_size = config["megatron_cfg"]["pipeline_model_parallel_size"]
"""
CONFIG = """policy:
  dtensor_cfg:
    enabled: false
  megatron_cfg:
    enabled: true
    pipeline_model_parallel_size: {pp}
{extra}cluster:
  gpus_per_node: 8
  num_nodes: 4
"""
SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
{debug}: "${{CONFIG_PATH:?CONFIG_PATH is required}}"
python ./examples/nemo_gym/run_grpo_nemo_gym.py --config {config} logger.wandb_enabled=True
"""


def _scan(capsys, tmp_path: Path, config: str, pp: int = 1, debug: bool = False, extra: str = "",
          *more: str) -> dict:
    (tmp_path / "examples" / "nemo_gym").mkdir(parents=True, exist_ok=True)
    (tmp_path / "examples" / "nemo_gym" / "run_grpo_nemo_gym.py").write_text(RUN, encoding="utf-8")
    (tmp_path / "nemo_rl" / "models" / "megatron").mkdir(parents=True, exist_ok=True)
    (tmp_path / "nemo_rl" / "models" / "megatron" / "setup.py").write_text(SETUP, encoding="utf-8")
    (tmp_path / "stage1.yaml").write_text(CONFIG.format(pp=pp, extra=extra), encoding="utf-8")
    script = tmp_path / "launch.sh"
    script.write_text(SCRIPT.format(config=config, debug="export TORCH_DISTRIBUTED_DEBUG=DETAIL\n" if debug else ""),
                      encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json", *more])
    return json.loads(capsys.readouterr().out)


def test_two_stages_are_judged_on_megatron_core_defaults(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "stage1.yaml", pp=2)
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2
    assert doc["config"]["effective"]["batch_p2p_comm"] is True


def test_two_stages_under_detail_on_torch_2_10_have_findings(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "stage1.yaml", 2, True, "", "--torch", "2.10.0")
    assert doc["verdict"]["status"] == "findings", doc["verdict"]["headline"]


def test_model_overrides_stay_not_covered(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "stage1.yaml", 2, False, "    model_overrides:\n      batch_p2p_comm: false\n")
    assert doc["verdict"]["status"] == "not-covered", doc["verdict"]["headline"]
    assert "model_overrides" in doc["verdict"]["headline"]


def test_an_override_of_the_size_on_a_config_not_known_stays_undecided(capsys, tmp_path):
    """Half a reading: the size is given, the backend and model_overrides are not."""
    script = SCRIPT.replace("logger.wandb_enabled=True", "policy.megatron_cfg.pipeline_model_parallel_size=2")
    (tmp_path / "examples" / "nemo_gym").mkdir(parents=True)
    (tmp_path / "examples" / "nemo_gym" / "run_grpo_nemo_gym.py").write_text(RUN, encoding="utf-8")
    (tmp_path / "launch.sh").write_text(script.format(config="${CONFIG_PATH}", debug=""), encoding="utf-8")
    cli.main(["scan", "--config", str(tmp_path / "launch.sh"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "--config ${CONFIG_PATH} is not known statically" in doc["verdict"]["headline"]
