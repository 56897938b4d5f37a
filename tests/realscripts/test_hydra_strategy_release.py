"""`[hydra_strategy]` (rules/verl.toml: a strategy of fsdp/fsdp2 on every role starts verl's
FSDP workers, no pipeline) is verified on the verl releases its `versions` names and on a checkout
whose main_ppo.py holds its `code`: volcengine/verl b178a3cd56 (0.8.0.dev) verl/trainer/main_ppo.py:153
`if config.actor_rollout_ref.actor.strategy in {"fsdp", "fsdp2"}:`. From 0.8.0 on main_ppo.py
starts a v1 trainer or main_ppo_v0's TaskRunner (0.9.1 :183-191): not verified, so a run stated
on such a release, or on none, is undecided naming the step (`--target verl==VERSION`), never NOT A
PIPELINE RUN by a rule read beyond its range. The checkout is test_verl_strategy.py's (verl's
ppo_trainer.yaml composing `strategy: fsdp` for every role).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.entry_stack import UnknownStack
from auditor.config.launch import NotAPipelineRun, read_launch, refuse_not_pipeline
from tests.realscripts.test_verl_strategy import _checkout

LINE = "python3 -m verl.trainer.main_ppo --config-name=ppo_trainer trainer.n_gpus_per_node=8\n"


def _launch(root: Path, head: str = ""):
    script = root / "examples/multiturn/run.sh"
    script.write_text(f"{head}{LINE}")
    return read_launch(script)


def test_a_stated_release_within_the_verified_range_is_no_pipeline_run(tmp_path: Path) -> None:
    with pytest.raises(NotAPipelineRun):
        refuse_not_pipeline(_launch(_checkout(tmp_path), "# verl==0.6.1\n"))


def test_a_stated_release_beyond_the_verified_range_is_undecided(tmp_path: Path) -> None:
    with pytest.raises(UnknownStack) as caught:
        refuse_not_pipeline(_launch(_checkout(tmp_path), "# verl==0.9.1\n"))
    assert "0.9.1" in caught.value.what and "0.7.0" in caught.value.what
    assert "--target verl==" in caught.value.decide


def test_no_release_stated_is_undecided_naming_the_target(tmp_path: Path) -> None:
    with pytest.raises(UnknownStack) as caught:
        refuse_not_pipeline(_launch(_checkout(tmp_path)))
    assert caught.value.decide.startswith("--target verl==")


def test_a_target_within_the_range_decides_it(tmp_path: Path) -> None:
    with pytest.raises(NotAPipelineRun):
        refuse_not_pipeline(_launch(_checkout(tmp_path)), {"verl": "0.7.0"})


def _dev_checkout(root: Path, code: str) -> Path:
    """The b178a3cd56 checkout's shape: verl/version/version 0.8.0.dev, read by its pyproject."""
    root = _checkout(root)
    (root / "verl/version").mkdir()
    (root / "verl/__init__.py").write_text("")
    (root / "verl/version/version").write_text("0.8.0.dev\n")
    (root / "pyproject.toml").write_text(  # b178a3cd56 pyproject.toml:19, :98-99
        '[project]\nname = "verl"\ndynamic = ["version"]\n\n'
        '[tool.setuptools.dynamic]\nversion = {file = "verl/version/version"}\n')
    main = root / "verl/trainer/main_ppo.py"
    main.write_text(main.read_text() + code)
    return root


def test_a_checkout_holding_the_rule_s_code_is_verified(tmp_path: Path) -> None:
    """The b178a3cd56 checkout states 0.8.0.dev and holds main_ppo.py:153's strategy test."""
    code = ('def add_actor_rollout_worker(self, config):\n'
            '    if config.actor_rollout_ref.actor.strategy in {"fsdp", "fsdp2"}:\n        pass\n')
    with pytest.raises(NotAPipelineRun):
        refuse_not_pipeline(_launch(_dev_checkout(tmp_path / "held", code)))
    with pytest.raises(UnknownStack):  # the release beyond the range, its code not there
        refuse_not_pipeline(_launch(_dev_checkout(tmp_path / "gone", "")))
