"""NeMo-RL hands policy.megatron_cfg.env_vars to the Megatron workers' environment
(NVIDIA-NeMo/RL@7ea279abfbeb698b092856d0dab61e7cf39bc909 nemo_rl/models/policy/lm_policy.py:147,
`env_vars = dict(config["megatron_cfg"].get("env_vars") or {})`, passed to the worker group at
:299), so the torch rules read them as the workers' environment; and a config not known
statically may set them (and model_overrides), so it is never CLEAN by "holds for any".

Scripts written after examples/nemo_gym/nemotron-3-super/super_launch.sh:8,160-161 and
examples/nemo_gym/run_grpo_nemo_gym.py at that commit (the same shapes as
test_nemo_rl_any_config.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from auditor import cli
from tests.realscripts.test_nemo_rl_any_config import CONFIG, RUN, SETUP

SCRIPT = """#!/usr/bin/env bash
# torch==2.10.0
set -euo pipefail
: "${{CONFIG_PATH:?CONFIG_PATH is required}}"
python ./examples/nemo_gym/run_grpo_nemo_gym.py --config {config} logger.wandb_enabled=True {more}
"""


def _scan(capsys, tmp_path: Path, config: str, extra: str = "", more: str = "") -> dict:
    (tmp_path / "examples" / "nemo_gym").mkdir(parents=True, exist_ok=True)
    (tmp_path / "examples" / "nemo_gym" / "run_grpo_nemo_gym.py").write_text(RUN, encoding="utf-8")
    (tmp_path / "nemo_rl" / "models" / "megatron").mkdir(parents=True, exist_ok=True)
    (tmp_path / "nemo_rl" / "models" / "megatron" / "setup.py").write_text(SETUP, encoding="utf-8")
    (tmp_path / "stage1.yaml").write_text(CONFIG.format(pp=2, extra=extra), encoding="utf-8")
    (tmp_path / "launch.sh").write_text(SCRIPT.format(config=config, more=more), encoding="utf-8")
    cli.main(["scan", "--config", str(tmp_path / "launch.sh"), "--format", "json"])
    return json.loads(capsys.readouterr().out)


def test_env_vars_of_the_config_reach_the_torch_rules(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "stage1.yaml", "    env_vars:\n      TORCH_DISTRIBUTED_DEBUG: DETAIL\n")
    assert doc["verdict"]["status"] == "findings", doc["verdict"]["headline"]
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in doc["verdict"]["headline"]


def test_env_vars_given_as_an_override_reach_the_torch_rules(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "stage1.yaml", more="++policy.megatron_cfg.env_vars.TORCH_DISTRIBUTED_DEBUG=DETAIL")
    assert doc["verdict"]["status"] == "findings", doc["verdict"]["headline"]


def test_an_env_var_not_known_statically_is_unknown(capsys, tmp_path):
    """An OmegaConf interpolation: the value is the caller's, not known here."""
    doc = _scan(capsys, tmp_path, "stage1.yaml", "    env_vars:\n      TORCH_DISTRIBUTED_DEBUG: ${oc.env:LEVEL}\n")
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "TORCH_DISTRIBUTED_DEBUG" in json.dumps(doc["verdict"])


def test_env_vars_without_debug_stay_clean(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "stage1.yaml", "    env_vars:\n      NCCL_DEBUG: INFO\n")
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]


def test_a_config_not_known_is_inconclusive_naming_the_config(capsys, tmp_path):
    """The unread config may set env_vars or model_overrides: no "holds for any"."""
    doc = _scan(capsys, tmp_path, "${CONFIG_PATH}")
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "--config ${CONFIG_PATH} is not known statically" in doc["verdict"]["headline"]
    assert "Holds for any" not in doc["verdict"]["headline"]


def test_env_vars_that_are_no_mapping_leave_the_run_undecided(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, "stage1.yaml", "    env_vars: ${oc.env:WORKER_ENV}\n")
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "env_vars" in doc["verdict"]["headline"]
