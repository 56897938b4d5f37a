"""A `[[model_setting]]` holds only where the run's own ChatLearn runs its assignment, at the place
the rule names (review 5 of the model facts: H1-H3).

alibaba/ChatLearn@b7af31a972eb6c420ef0b5c04ea920820d68f784 chatlearn/utils/megatron_utils.py:
update_cfg (:20) returns update_qwen3_next_cfg(...) for Qwen3NextForCausalLM (:24-25), else sets
`num_layers = hf_transformer_config.num_hidden_layers` (:29), `hidden_size` (:30),
`num_attention_heads` (:31); update_qwen3_next_cfg (:114) sets `num_layers = ... * 2` (:116) and
`hidden_size` (:124). A fork that deletes or comments out :29 keeps the YAML's num_layers (a pruned
model): a substring search of the file found :29's text inside :116 and took the model's layer
count (false CLEAN / false DOES NOT START). The trees below are such forks, written here in the
shape of tests/realscripts/test_model_facts.py's reproduction of that checkout.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config import model_facts
from auditor.config.frontends.assign_place import Place, place
from tests.realscripts.test_chatlearn import _read, chatlearn_tree

LAYERS = "    cfg.models.policy_trainer.megatron_model_cfg.num_layers = hf_transformer_config.num_hidden_layers\n"
UTILS = """from transformers import AutoConfig

def update_cfg(cfg):
    hf_transformer_config = AutoConfig.from_pretrained(cfg.models.policy.load)
    if hf_transformer_config.architectures[0] == "Qwen3NextForCausalLM":
        return update_qwen3_next_cfg(cfg, hf_transformer_config)
{layers}    cfg.models.policy_trainer.megatron_model_cfg.hidden_size = hf_transformer_config.hidden_size
    cfg.models.policy_trainer.megatron_model_cfg.num_attention_heads = hf_transformer_config.num_attention_heads
    cfg.models.ref_policy.megatron_model_cfg = cfg.models.policy_trainer.megatron_model_cfg
    return cfg

def update_qwen3_next_cfg(cfg, hf_transformer_config):
{next_layers}    cfg.models.policy_trainer.megatron_model_cfg.hidden_size = hf_transformer_config.hidden_size
    cfg.models.policy_trainer.megatron_model_cfg.num_attention_heads = hf_transformer_config.num_attention_heads
    cfg.models.ref_policy.megatron_model_cfg = cfg.models.policy_trainer.megatron_model_cfg
    return cfg
{extra}"""
NEXT_LAYERS = ("    cfg.models.policy_trainer.megatron_model_cfg.num_layers = "
               "hf_transformer_config.num_hidden_layers * 2\n")


def _flags(root: Path, monkeypatch: pytest.MonkeyPatch, model: str, yaml: str = "", layers: str = LAYERS,
           next_layers: str = NEXT_LAYERS, extra: str = ""):
    overrides = (f"models.policy_trainer.pipeline_model_parallel_size=4 "
                 f"models.policy.load=${{CHATLEARN}}/pretrained_models/{model} {yaml}")
    script = chatlearn_tree(root, overrides=overrides)
    (root / "chatlearn" / "utils").mkdir()
    (root / "chatlearn" / "utils" / "megatron_utils.py").write_text(
        UTILS.format(layers=layers, next_layers=next_layers, extra=extra))
    monkeypatch.chdir(root)
    return _read(script).flags


PRUNED = "models.policy_trainer.megatron_model_cfg.num_layers=30"


def test_text_inside_a_longer_statement_is_not_the_assignment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """:29 deleted: only :116's `... * 2` holds its text; the YAML's 30 layers hold for Qwen3-8B."""
    flags = _flags(tmp_path, monkeypatch, "Qwen3-8B", PRUNED, layers="")
    assert flags["num_layers"].value == "30" and "from grpo_megatron.yaml" in flags["num_layers"].spelling


def test_a_commented_out_line_is_not_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flags = _flags(tmp_path, monkeypatch, "Qwen3-235B-A22B", PRUNED.replace("30", "92"),
                   layers="    # " + LAYERS.lstrip() + "    pass\n")
    assert flags["num_layers"].value == "92"
    assert flags["hidden_size"].value == "4096"  # :30 still runs


@pytest.mark.parametrize("layers, extra", [
    ('    if hf_transformer_config.architectures[0] == "Qwen2_5_VLForConditionalGeneration":\n    ' + LAYERS, ""),
    ("    for _ in range(1):\n    " + LAYERS, ""),
    ("", "\ndef unused(cfg, hf_transformer_config):\n" + LAYERS),
    (LAYERS + "    if cfg.prune:\n        cfg.models.policy_trainer.megatron_model_cfg.num_layers = 30\n", ""),
])
def test_the_assignment_not_where_the_rule_says_leaves_the_key_unknown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layers: str, extra: str) -> None:
    """On another architecture's branch, in a loop, in another function, or assigned otherwise
    after it: neither the model's fact nor the YAML's value is known to hold."""
    flag = _flags(tmp_path, monkeypatch, "Qwen3-235B-A22B", PRUNED, layers=layers, extra=extra)["num_layers"]
    assert isinstance(flag.value, Symbolic) and "--set num_layers=N" in str(flag.value)
    assert "megatron_utils.py:29" in str(flag.value)


def test_the_architectures_function_without_the_assignment_leaves_the_key_unknown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """update_qwen3_next_cfg runs for Qwen3-Next (:24-25): update_cfg's :29 does not."""
    flag = _flags(tmp_path, monkeypatch, "Qwen3-Next-80B-A3B-Instruct", PRUNED, next_layers="")["num_layers"]
    assert isinstance(flag.value, Symbolic) and "update_qwen3_next_cfg" in str(flag.value)


def test_the_hidden_size_is_the_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """:30 writes config.json's hidden_size over the YAML's (review 5 H2, g_hidden.sh); :124 for Qwen3-Next."""
    flags = _flags(tmp_path / "a", monkeypatch, "Qwen3-235B-A22B", "models.policy_trainer.megatron_model_cfg.hidden_size=4000")
    assert flags["hidden_size"].value == "4096" and "megatron_utils.py:30" in flags["hidden_size"].spelling
    nxt = _flags(tmp_path / "b", monkeypatch, "Qwen3-Next-80B-A3B-Instruct")["hidden_size"]
    assert nxt.value == "2048" and "megatron_utils.py:124" in nxt.spelling


def test_a_guard_the_rule_states_is_passed_and_others_are_not() -> None:
    """megatron_utils.py:59, :65-67: Qwen3-MoE's experts under `hasattr(..., 'moe_intermediate_size')`."""
    code = "cfg.x.num_experts = hf_transformer_config.num_experts"
    setting = {"code": code, "function": "update_cfg", "architecture": "Qwen3MoeForCausalLM",
               "source": "test", "guards": ["hasattr(hf_transformer_config, 'moe_intermediate_size')"]}
    module = ast.parse(f"""def update_cfg(cfg):
    if hasattr(hf_transformer_config, 'moe_intermediate_size'):
        if "Qwen3MoeForCausalLM" == hf_transformer_config.architectures[0]:
            {code}
""")
    assert place(module, setting) is Place.HERE
    assert place(module, {**setting, "guards": []}) is Place.ELSEWHERE
    assert place(module, {**setting, "architecture": "DeepseekV3ForCausalLM"}) is Place.ELSEWHERE
    assert place(ast.parse("def update_cfg(cfg):\n    pass\n# " + code), setting) is Place.ABSENT


def test_a_hub_id_matches_whole_and_a_local_path_by_its_last_part() -> None:
    """Review 5 H3: another org's weights of the same name are not the entry's (swift u2_otherorg.sh)."""
    assert model_facts.lookup("my-org/Moonlight-16B-A3B-Instruct") is None
    assert model_facts.lookup("other/Qwen3-235B-A22B") is None
    assert model_facts.lookup("moonshotai/moonlight-16b-a3b-instruct") is not None
    assert model_facts.lookup("Qwen/Qwen3-8B/").values["num_layers"] == 36
    for local in ("/ckpt/Moonlight-16B-A3B-Instruct", "./Qwen3-8B", "~/models/Qwen3-8B", "${HOME}/Qwen3-8B",
                  "ckpt/my-org/Qwen3-8B", "Qwen3-8B"):
        assert model_facts.lookup(local) is not None, local
