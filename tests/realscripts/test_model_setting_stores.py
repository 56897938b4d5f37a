"""Any other store of the key, or a return before the rule's statement, leaves a `[[model_setting]]`
unknown (review 6 H2).

Trees in the shape of alibaba/ChatLearn@b7af31a972eb6c420ef0b5c04ea920820d68f784
chatlearn/utils/megatron_utils.py update_cfg (:20-31; :29 sets num_layers from config.json), as in
tests/realscripts/test_model_setting_place.py: a fork that, besides :29, writes num_layers through
setattr, `+=`, a match case or an alias, or returns before :29, runs with neither the model's 36
layers (Qwen3-8B) nor the YAML's 30 known to hold.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.frontends.assign_place import Place, place
from tests.realscripts.test_model_setting_place import LAYERS, PRUNED, _flags

TARGET = "cfg.models.policy_trainer.megatron_model_cfg"


@pytest.mark.parametrize("layers", [
    LAYERS + f"    setattr({TARGET}, 'num_layers', 30)\n",
    LAYERS + f"    name = 'num_layers'\n    setattr({TARGET}, name, 30)\n",
    LAYERS + f"    {TARGET}.__setattr__('num_layers', 30)\n",
    LAYERS + f"    {TARGET}.num_layers += 2\n",
    LAYERS + f"    {TARGET}.num_layers: int = 30\n",
    LAYERS + f"    a, {TARGET}.num_layers = 1, 30\n",
    LAYERS + f"    match cfg.prune:\n        case True:\n            {TARGET}.num_layers = 30\n",
    "    if cfg.keep_yaml:\n        return cfg\n" + LAYERS,
    "    if cfg.keep_yaml:\n        raise ValueError(cfg)\n" + LAYERS,
    '    if hf_transformer_config.architectures[0] == "Qwen3ForCausalLM":\n        return cfg\n' + LAYERS,
    f"    m = {TARGET}\n    m.num_layers = hf_transformer_config.num_hidden_layers\n",
])
def test_another_store_or_an_early_return_leaves_the_key_unknown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layers: str) -> None:
    flag = _flags(tmp_path, monkeypatch, "Qwen3-8B", PRUNED, layers=layers)["num_layers"]
    assert isinstance(flag.value, Symbolic) and "--set num_layers=N" in str(flag.value), flag.value


def test_the_model_layers_hold_past_the_other_architectures_return(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """:24-25 returns for Qwen3-Next only, which its own rule (:116) covers."""
    flag = _flags(tmp_path, monkeypatch, "Qwen3-8B", PRUNED)["num_layers"]
    assert flag.value == "36" and "megatron_utils.py:29" in flag.spelling


def test_a_setattr_of_any_name_is_not_absent() -> None:
    setting = {"code": f"{TARGET}.num_layers = hf_transformer_config.num_hidden_layers",
               "function": "update_cfg", "source": "test"}
    assert place(ast.parse("def update_cfg(cfg):\n    setattr(cfg, k, v)\n"), setting) is Place.ELSEWHERE
    assert place(ast.parse("def update_cfg(cfg):\n    setattr(cfg, 'other', v)\n"), setting) is Place.ABSENT


def test_a_return_for_an_architecture_whose_rule_is_not_there_leaves_the_key_unknown() -> None:
    """The Qwen3-Next return (:24-25) is left to the rule of :116 only where :116 is there."""
    general = {"code": f"{TARGET}.num_layers = hf_transformer_config.num_hidden_layers",
               "function": "update_cfg", "source": "test"}
    special = {"code": f"{TARGET}.num_layers = hf_transformer_config.num_hidden_layers * 2",
               "function": "update_qwen3_next_cfg", "architecture": "Qwen3NextForCausalLM", "source": "test"}
    head = ("def update_cfg(cfg):\n    if hf_transformer_config.architectures[0] == 'Qwen3NextForCausalLM':\n"
            "        return cfg\n    " + general["code"] + "\n")
    assert place(ast.parse(head), general, [general, special]) is Place.ELSEWHERE
    full = head + "def update_qwen3_next_cfg(cfg):\n    " + special["code"] + "\n"
    assert place(ast.parse(full), general, [general, special]) is Place.HERE
