"""A ChatLearn run whose checkout is not here (issue 22): the model settings are judged on the
ChatLearn releases the rules cover (rules/chatlearn.toml `[model_config] releases`).

The construct: alibaba/Pai-Megatron-Patch at commit a098ca5acbdeaf7172ce0393fa309b39a77506db,
examples/qwen3/run_mcore_qwen3_235b_chatlearn.sh runs its copy of ChatLearn's entry with
chatlearn_configs/grpo_megatron.yaml and models.policy.load=.../Qwen3-235B-A22B (:34, :78);
ChatLearn is the submodule backends/rl/ChatLearn (248875a4a5), absent from a tree fetched without
submodules. ChatLearn's update_cfg sets num_layers from the model's config.json
(alibaba/ChatLearn@b7af31a972 chatlearn/utils/megatron_utils.py:29, pai-chatlearn 1.2.0 alike), so
the key is decided only where every covered release sets it the same way for that model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from tests.realscripts.test_chatlearn import MEGATRON, RULES
from tests.realscripts.test_chatlearn_copy import _read, pai_tree


def _run(root: Path, model: str) -> Path:
    script = pai_tree(root, "../qwen3/chatlearn_configs/grpo_megatron.yaml")
    (root / "examples" / "qwen3" / "chatlearn_configs" / "grpo_megatron.yaml").write_text(
        MEGATRON + f"    load: /mnt/data/ckpts/huggingface/{model}\n")
    return script


def test_a_key_every_release_sets_alike_is_decided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _run(tmp_path, "Qwen3-235B-A22B")
    monkeypatch.chdir(script.parent)
    flag = _read(script).flags["num_layers"]
    assert flag.value == "94"
    assert "every release the rules cover" in flag.spelling


def test_a_key_the_releases_set_apart_stays_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Qwen3-Next: the checkout doubles num_layers (update_qwen3_next_cfg), pai-chatlearn 1.2.0 has
    no such branch, so without the run's checkout it is not known."""
    script = _run(tmp_path, "Qwen3-Next-80B-A3B-Instruct")
    monkeypatch.chdir(script.parent)
    value = _read(script).flags["num_layers"].value
    assert isinstance(value, Symbolic) and "--set num_layers=N" in str(value)


def test_the_releases_named_are_the_ones_the_rules_are_checked_on() -> None:
    """A release added to `releases` must first be checked like these two
    (test_chatlearn.py: test_the_rules_quote_the_chatlearn_checkout, test_the_rules_hold_on_the_pypi_release)."""
    quoted = {s["source"].split()[0] for s in RULES["model_setting"]}
    assert RULES["model_config"]["releases"] == [*sorted(quoted), "pai-chatlearn==1.2.0"]
