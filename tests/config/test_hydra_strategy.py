"""config.frontends.hydra_strategy on its own: the strategy of every role in the config a verl
command composes decides NOT A PIPELINE RUN, and an override that may set a strategy unseen
decides nothing (the checkout is the one tests/realscripts/test_verl_strategy.py writes after
volcengine/verl b178a3cd56)."""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Field
from auditor.config.frontends.hydra_strategy import judge_strategy
from auditor.config.model import LaunchConfig
from tests.realscripts.test_verl_strategy import _checkout


def _said(root: Path, *words: str) -> list[str]:
    script = root / "examples/multiturn/run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo\n")
    config = LaunchConfig(path=str(script), launcher="python3 -m verl.trainer.main_ppo", command_line=1)
    judge_strategy(config, [Field(w, 1) for w in words], str(script))
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


def test_the_main_s_own_config_on_fsdp_is_no_pipeline_run(tmp_path: Path) -> None:
    said = _said(_checkout(tmp_path), "data.x=1")
    assert len(said) == 1 and "fsdp" in said[0]


def test_a_group_override_decides_nothing(tmp_path: Path) -> None:
    assert _said(_checkout(tmp_path), "actor@actor_rollout_ref.actor=megatron_actor") == []


def test_the_megatron_config_decides_nothing(tmp_path: Path) -> None:
    assert _said(_checkout(tmp_path), "--config-name=ppo_megatron_trainer") == []
