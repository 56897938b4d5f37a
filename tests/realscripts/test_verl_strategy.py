"""verl runs on FSDP are no pipeline runs (issue 22 item 11): verl's TaskRunner picks the actor's
workers by `actor_rollout_ref.actor.strategy` (volcengine/verl b178a3cd56 verl/trainer/main_ppo.py:153,
0.6.1 :124: fsdp/fsdp2 -> fsdp_workers, megatron -> megatron_workers), read from the Hydra config
the script composes. The checkout written here mirrors verl's: main_ppo.py's
`@hydra.main(config_path="config", config_name="ppo_trainer")`, ppo_trainer.yaml's defaults
`actor@actor_rollout_ref.actor: dp_actor` (verl/trainer/config/ppo_trainer.yaml:13, dp_actor.yaml:26
`strategy: fsdp`), and examples/sglang_multiturn/run_qwen2.5-3b_gsm8k_multiturn_server.sh's
`--config-path="$PROJECT_DIR/examples/sglang_multiturn/config"` with PROJECT_DIR="$(pwd)" (:8-9, :18-19),
whose gsm8k_multiturn_grpo_server.yaml adds `hydra.searchpath: file://verl/trainer/config` and
defaults `ppo_trainer`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import rulebook
from auditor.rulebook import files
from auditor.config.launch import read_launch

MAIN = '@hydra.main(config_path="config", config_name="ppo_trainer", version_base=None)\n'


def _checkout(root: Path) -> Path:
    config = root / "verl/trainer/config"
    (config / "actor").mkdir(parents=True)
    (root / "verl/trainer/main_ppo.py").write_text(MAIN)
    (root / "setup.py").write_text("")
    (config / "ppo_trainer.yaml").write_text(
        "defaults:\n  - actor@actor_rollout_ref.actor: dp_actor\n  - _self_\ntrainer:\n  nnodes: 1\n"
        "critic:\n  strategy: fsdp\nreward_model:\n  strategy: fsdp\n")  # dp_critic.yaml:26, dp_reward_model.yaml:16
    (config / "ppo_megatron_trainer.yaml").write_text(
        "defaults:\n  - actor@actor_rollout_ref.actor: megatron_actor\n  - _self_\n"
        "critic:\n  strategy: megatron\nreward_model:\n  strategy: megatron\n")
    (config / "actor/dp_actor.yaml").write_text("strategy: fsdp\n")
    (config / "actor/megatron_actor.yaml").write_text("strategy: megatron\n")
    own = root / "examples/multiturn/config"
    own.mkdir(parents=True)
    (own / "server.yaml").write_text(
        "hydra:\n  searchpath:\n    - file://verl/trainer/config\n\ndefaults:\n  - ppo_trainer\n  - _self_\n")
    return root


def _not_pipeline(root: Path, command: str) -> list[str]:
    script = root / "examples/multiturn/run.sh"
    script.write_text(f'set -x\nPROJECT_DIR="$(pwd)"\nCONFIG_PATH="$PROJECT_DIR/examples/multiturn/config"\n'
                      f"python3 -m verl.trainer.main_ppo {command} trainer.n_gpus_per_node=8 trainer.nnodes=1\n")
    config = read_launch(script)
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


def test_a_composed_fsdp_actor_is_no_pipeline_run(tmp_path: Path) -> None:
    said = _not_pipeline(_checkout(tmp_path), '--config-path="$CONFIG_PATH" --config-name=\'server\'')
    assert said and "fsdp" in said[0] and "actor_rollout_ref.actor.strategy" in said[0]


def test_the_default_config_is_ppo_trainer(tmp_path: Path) -> None:
    assert _not_pipeline(_checkout(tmp_path), "data.x=1")


def test_a_megatron_config_or_override_stays_a_megatron_run(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    assert not _not_pipeline(root, "--config-path=config --config-name='ppo_megatron_trainer.yaml'")
    assert not _not_pipeline(root, "--config-path=./config --config-name=ppo_trainer "
                                   "actor_rollout_ref.actor.strategy=megatron")


def test_an_fsdp2_override_is_no_pipeline_run(tmp_path: Path) -> None:
    said = _not_pipeline(_checkout(tmp_path), "--config-name=ppo_trainer actor_rollout_ref.actor.strategy=fsdp2")
    assert said and "fsdp2" in said[0]


def test_an_unknown_strategy_is_not_guessed(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    assert not _not_pipeline(root, "--config-name=ppo_trainer actor_rollout_ref.actor.strategy=$STRATEGY")
    assert not _not_pipeline(root, "--config-name=missing")


def test_a_group_file_names_its_defaults_relative_to_its_group(tmp_path: Path) -> None:
    """verl/trainer/config/actor/dp_actor.yaml:1-12 (b178a3cd56): `- ../optim@optim: fsdp` and
    `- actor` (actor/actor.yaml, not the top's actor.yaml), as Hydra 1.1 reads a group's file."""
    from auditor.config.hydra_compose import at, compose

    (tmp_path / "actor").mkdir()
    (tmp_path / "optim").mkdir()
    (tmp_path / "top.yaml").write_text("defaults:\n  - actor@a.actor: dp_actor\n  - _self_\n")
    (tmp_path / "actor/dp_actor.yaml").write_text(
        "defaults:\n  - ../optim@optim: fsdp\n  - actor\n  - _self_\nstrategy: fsdp\n")
    (tmp_path / "actor/actor.yaml").write_text("strategy: ???\nclip: 1\n")
    (tmp_path / "optim/fsdp.yaml").write_text("lr: 0.1\n")
    data = compose(tmp_path, "top").data
    assert at(data, "a.actor.strategy") == "fsdp" and at(data, "a.actor.clip") == 1
    assert at(data, "a.actor.optim.lr") == 0.1


_STRATEGY_VERSIONS = rulebook.load("verl").section("hydra_strategy")["versions"]


@pytest.mark.parametrize("version", sorted({*(v for v in rulebook.load("verl").section("framework")["verified"]
                                              if files.version_in(v, _STRATEGY_VERSIONS)), "0.7.0"}))
def test_the_rules_hold_on_each_verified_release(version: str) -> None:
    """[hydra_strategy] against the verl wheel: main_ppo.py's hydra.main and strategy test, and the
    release's own configs composed: ppo_trainer trains on FSDP, ppo_megatron_trainer on Megatron."""
    from auditor import sources
    from auditor.config.hydra_compose import at, compose

    rule = rulebook.load("verl").section("hydra_strategy")
    assert files.version_in(version, rule["versions"])  # `versions` covers each release checked here
    root = sources.resolve(f"verl=={version}").root
    main = (root / rule["main"]).read_text(encoding="utf-8")
    assert rule["code"] in main
    assert f'@hydra.main(config_path="{rule["config_path"]}", config_name="{rule["config_name"]}"' in main
    config_dir = (root / rule["main"]).parent / rule["config_path"]
    for key in rule["keys"]:
        assert at(compose(config_dir, rule["config_name"]).data, key) in rule["not_pipeline"]
        assert at(compose(config_dir, "ppo_megatron_trainer").data, key) == "megatron"


def test_a_megatron_critic_keeps_the_megatron_reading(tmp_path: Path) -> None:
    """main_ppo.py:175-187 (b178a3cd56) starts megatron_workers.CriticWorker for
    `critic.strategy=megatron`, whatever the actor's: not every role on FSDP, no NOT A PIPELINE RUN."""
    root = _checkout(tmp_path)
    assert not _not_pipeline(root, "--config-name=ppo_trainer critic.strategy=megatron")


@pytest.mark.parametrize("override", [
    "actor@actor_rollout_ref.actor=megatron_actor",  # a Hydra group override (ppo_trainer.yaml:13's group)
    "+actor@actor_rollout_ref.actor=megatron_actor",
    "actor_rollout_ref/actor=megatron_actor",
    "actor_rollout_ref.actor=$ACTOR",  # a prefix of a strategy key: may replace the whole node
    "critic=megatron_critic",
])
def test_an_override_that_may_change_a_strategy_decides_nothing(tmp_path: Path, override: str) -> None:
    assert not _not_pipeline(_checkout(tmp_path), f"--config-name=ppo_trainer {override}")


@pytest.mark.parametrize("words", ["${KEY}=megatron", "actor_rollout_ref.${ROLE}.strategy=megatron"])
def test_an_override_of_a_key_not_known_statically_decides_nothing(tmp_path: Path, words: str) -> None:
    assert not _not_pipeline(_checkout(tmp_path), f"--config-name=ppo_trainer {words}")


def test_a_plain_unrelated_override_keeps_the_fsdp_reading(tmp_path: Path) -> None:
    assert _not_pipeline(_checkout(tmp_path), "--config-name=ppo_trainer actor_rollout_ref.rollout.n=4 +x.y=1 data.f=$HOME/d")
