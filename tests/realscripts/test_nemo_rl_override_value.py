"""A NeMo-RL Hydra override whose key is known and whose value is not (`++cluster.num_nodes=
$NUM_ACTOR_NODES`) sets that key only, as config.overrides reads such a word: the backend and the
pipeline size stay the config's, and the run is judged; one that sets a key the verdict rests on
(the size, or a section above it) leaves the run undecided, naming it (turn 18, h38-rl).

Written after NVIDIA-NeMo/RL at commit 7ea279abfbeb698b092856d0dab61e7cf39bc909,
examples/nemo_gym/launch_nemo_gym_multinode_training.sh :28-33 (`uv run python
examples/nemo_gym/run_grpo_nemo_gym.py ++cluster.num_nodes=$NUM_ACTOR_NODES
++logger.wandb.name=$EXP_NAME ... $@`, the caller's parameters listed at :16).
"""

from __future__ import annotations

import tests.realscripts.test_nemo_rl_any_config as base
from tests.realscripts.test_nemo_rl_any_config import SCRIPT, _scan


def test_an_override_of_another_key_leaves_the_config_judged(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(base, "SCRIPT", SCRIPT.replace(
        "logger.wandb_enabled=True", "++cluster.num_nodes=$NUM_ACTOR_NODES ++logger.log_dir=results/$EXP_NAME"))
    doc = _scan(capsys, tmp_path / "other", "stage1.yaml", 2)
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2
    # one that sets the size, or a section above the backend's switch, is still undecided
    monkeypatch.setattr(base, "SCRIPT", SCRIPT.replace(
        "logger.wandb_enabled=True", "policy.megatron_cfg.pipeline_model_parallel_size=$PP"))
    doc = _scan(capsys, tmp_path / "size", "stage1.yaml", 1)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert "pipeline_model_parallel_size" in doc["verdict"]["headline"]
    monkeypatch.setattr(base, "SCRIPT", SCRIPT.replace("logger.wandb_enabled=True", "++policy.megatron_cfg=$CFG"))
    doc = _scan(capsys, tmp_path / "section", "stage1.yaml", 1)
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
