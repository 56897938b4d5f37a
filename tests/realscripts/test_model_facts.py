"""A model the launch script names only by its checkpoint path (issue 22, test12's one wrong row).

alibaba/ChatLearn@b7af31a972eb6c420ef0b5c04ea920820d68f784
scripts/mcore_vllm/train_mcore_vllm_qwen3_235b_grpo.sh sets `hf_ckpt_path=${CHATLEARN}/
pretrained_models/Qwen3-235B-A22B` (:16), `models.policy.load=${hf_ckpt_path}` (:59) and
`models.policy_trainer.pipeline_model_parallel_size=4` (:49). On the Megatron backend
GrpoAlgorithm runs update_cfg (chatlearn/algorithm/grpo.py:297-298), which takes num_layers from
that path's config.json (chatlearn/utils/megatron_utils.py:22, :29): Qwen3-235B-A22B's 94
layers do not split over PP 4, and Megatron-LM's validate_args stops every rank. The checkpoint
is the user's: the layer count comes from rules/models.toml, quoting Megatron-Bridge 0.3.1's
Qwen3MoEModelProvider235B_A22B; a path no entry names leaves it unknown, naming `--set`.
The trees are tests/realscripts/test_chatlearn.py's reproduction of that checkout.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config import model_facts
from tests.realscripts.test_chatlearn import ROOT, _read, _scan, chatlearn_tree

MODELS = tomllib.loads((ROOT / "rules" / "models.toml").read_text())["model"]


# chatlearn/utils/megatron_utils.py at that commit, the lines that read the model's config (:20-31,
# :59-72, :110, :114-125); pai-chatlearn 1.2.0 on PyPI has no Qwen3-Next branch (`next_branch=False`).
MEGATRON_UTILS = """from transformers import AutoConfig

def update_cfg(cfg):

    hf_transformer_config = AutoConfig.from_pretrained(cfg.models.policy.load)
{next_call}
    cfg.models.policy_trainer.megatron_model_cfg.num_layers = hf_transformer_config.num_hidden_layers
    cfg.models.policy_trainer.megatron_model_cfg.hidden_size = hf_transformer_config.hidden_size
    cfg.models.policy_trainer.megatron_model_cfg.num_attention_heads = hf_transformer_config.num_attention_heads
    if hasattr(hf_transformer_config, 'moe_intermediate_size'):
        if "Qwen3MoeForCausalLM" == hf_transformer_config.architectures[0]:
            cfg.models.policy_trainer.megatron_model_cfg.num_experts = hf_transformer_config.num_experts
        elif "DeepseekV3ForCausalLM" == hf_transformer_config.architectures[0]:
            cfg.models.policy_trainer.megatron_model_cfg.num_experts = hf_transformer_config.n_routed_experts
    cfg.models.ref_policy.megatron_model_cfg = cfg.models.policy_trainer.megatron_model_cfg
    return cfg
{next_def}"""

NEXT_CALL = """    if hf_transformer_config.architectures[0] == "Qwen3NextForCausalLM":
        return update_qwen3_next_cfg(cfg, hf_transformer_config)
"""

NEXT_DEF = """
def update_qwen3_next_cfg(cfg, hf_transformer_config):
    cfg.models.policy_trainer.megatron_model_cfg.num_layers = hf_transformer_config.num_hidden_layers * 2
    cfg.models.policy_trainer.megatron_model_cfg.num_attention_heads = hf_transformer_config.num_attention_heads
    cfg.models.ref_policy.megatron_model_cfg = cfg.models.policy_trainer.megatron_model_cfg
    return cfg
"""


def _tree(root: Path, model: str, pp: int, next_branch: bool = True) -> Path:
    load = model if model.startswith("$") else f"${{CHATLEARN}}/pretrained_models/{model}"
    overrides = f"models.policy_trainer.pipeline_model_parallel_size={pp} models.policy.load={load}"
    script = chatlearn_tree(root, overrides=overrides)
    (root / "chatlearn" / "utils").mkdir()
    (root / "chatlearn" / "utils" / "megatron_utils.py").write_text(MEGATRON_UTILS.format(
        next_call=NEXT_CALL if next_branch else "", next_def=NEXT_DEF if next_branch else ""))
    return script


def _flags(root: Path, monkeypatch: pytest.MonkeyPatch, model: str, which: int = 0, next_branch: bool = True):
    script = _tree(root, model, 4, next_branch)
    monkeypatch.chdir(root)  # the script runs from the checkout (`export CHATLEARN=$(pwd)`)
    return _read(script, which).flags


def _num_layers(root: Path, monkeypatch: pytest.MonkeyPatch, model: str, which: int = 0,
                next_branch: bool = True):
    return _flags(root, monkeypatch, model, which, next_branch)["num_layers"]


@pytest.mark.parametrize("which", [0, 1])  # policy_trainer, ref_policy (megatron_utils.py:110)
def test_the_layer_count_comes_from_the_model_the_policy_loads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: int) -> None:
    flag = _num_layers(tmp_path, monkeypatch, "Qwen3-235B-A22B", which)
    assert flag.value == "94"
    assert "Qwen3MoEModelProvider235B_A22B" in flag.spelling and "megatron_utils.py:29" in flag.spelling


def test_qwen3_next_is_megatrons_hybrid_model_of_twice_the_layers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """update_qwen3_next_cfg (megatron_utils.py:24, :116): num_hidden_layers * 2."""
    flag = _num_layers(tmp_path, monkeypatch, "Qwen3-Next-80B-A3B-Instruct")
    assert flag.value == "96" and "megatron_utils.py:116" in flag.spelling


def test_a_chatlearn_without_the_qwen3_next_branch_takes_the_layers_as_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pai-chatlearn 1.2.0's update_cfg has no Qwen3-Next branch: the run's own checkout decides."""
    flag = _num_layers(tmp_path, monkeypatch, "Qwen3-Next-80B-A3B-Instruct", next_branch=False)
    assert flag.value == "48" and "megatron_utils.py:29" in flag.spelling


def test_a_model_path_not_known_statically_leaves_the_layer_count_unknown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`models.policy.load=${HF_CKPT}` with HF_CKPT never set in the script."""
    flag = _num_layers(tmp_path, monkeypatch, "${HF_CKPT}")
    assert isinstance(flag.value, Symbolic) and "models.policy.load is not known statically" in str(flag.value)
    assert "--set num_layers=N" in str(flag.value)


@pytest.mark.parametrize("model,expected", [("Qwen3-235B-A22B", "94"), ("Qwen3-Next-80B-A3B-Instruct", None)])
def test_a_checkout_not_found_decides_only_what_every_covered_release_sets(
        model: str, expected: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rules/chatlearn.toml `[model_config] releases`: all run update_cfg's general line; only the
    checkout doubles Qwen3-Next's layers, so that one stays unknown."""
    script = _tree(tmp_path, model, 4)
    (tmp_path / "chatlearn" / "utils" / "megatron_utils.py").unlink()
    monkeypatch.chdir(tmp_path)
    flag = _read(script).flags["num_layers"]
    if expected is not None:
        assert flag.value == expected
    else:
        assert isinstance(flag.value, Symbolic) and "--set num_layers=N" in str(flag.value)


def test_only_a_moe_architecture_sets_the_experts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """megatron_utils.py:67 (Qwen3MoeForCausalLM) and :72 (DeepseekV3ForCausalLM); a dense Qwen3
    keeps what the YAML says; DeepSeek-V3's heads are not stated by its provider: unknown."""
    moe = _flags(tmp_path / "a", monkeypatch, "Qwen3-235B-A22B")
    assert (moe["num_experts"].value, moe["num_attention_heads"].value) == ("128", "64")
    assert "num_experts" not in _flags(tmp_path / "b", monkeypatch, "Qwen3-8B")
    deepseek = _flags(tmp_path / "c", monkeypatch, "DeepSeek-V3-0324-BF16")
    assert deepseek["num_experts"].value == "256" and deepseek["num_layers"].value == "61"
    assert "--set num_attention_heads=N" in str(deepseek["num_attention_heads"].value)


def test_a_model_no_entry_names_leaves_the_layer_count_unknown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag = _num_layers(tmp_path, monkeypatch, "my-own-model")
    assert isinstance(flag.value, Symbolic)
    assert "--set num_layers=N" in str(flag.value) and "my-own-model" in str(flag.value)


@pytest.mark.wheels
def test_94_layers_over_pp4_does_not_start_naming_the_source(tmp_path: Path) -> None:
    doc = _scan(_tree(tmp_path, "Qwen3-235B-A22B", 4), "--target", "megatron-core==0.17.0")
    headline = doc["verdict"]["headline"]
    assert headline.startswith("DOES NOT START: 94 layers do not split evenly over pipeline_model_parallel_size 4")
    assert not any("heads" in u["what"] for u in doc["verdict"]["startup_undecided"])  # 64 heads, TP 1


@pytest.mark.wheels
def test_an_unknown_model_leaves_the_layer_split_undecided_naming_the_set(tmp_path: Path) -> None:
    """The P2P verdict does not rest on start-up checks (issue 22 item 7), but the layer split is
    listed as not decided, naming the `--set` that decides it, not skipped as if no count were set."""
    doc = _scan(_tree(tmp_path / "a", "my-own-model", 4), "--target", "megatron-core==0.17.0")
    assert doc["verdict"]["status"] != "does-not-start", doc["verdict"]["headline"]
    undecided = doc["verdict"]["startup_undecided"]
    assert any("even-split" in u["what"] and u["decide"] == "--set num_layers=VALUE" for u in undecided), undecided
    decided = _scan(_tree(tmp_path / "b", "my-own-model", 4), "--target", "megatron-core==0.17.0",
                    "--set", "num_layers=95")
    assert decided["verdict"]["status"] == "findings" and "95 layers" in decided["verdict"]["headline"]


# --- the facts against the release that states them ---------------------------------------------

def _attributes(module: Path, name: str) -> tuple[dict[str, object], str]:
    """The class's `name: T = literal` fields, its bases' in the same module first, and its docstring."""
    classes = {n.name: n for n in ast.walk(ast.parse(module.read_text())) if isinstance(n, ast.ClassDef)}
    node = classes[name]
    out: dict[str, object] = {}
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            out.update(_attributes(module, base.id)[0])
    for stmt in node.body:
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and isinstance(stmt.value, ast.Constant)):
            out[stmt.target.id] = stmt.value.value
    return out, ast.get_docstring(node) or ""


@pytest.mark.parametrize("entry", [m for m in MODELS if "provider" in m], ids=lambda m: m["names"][0])
def test_each_fact_is_what_the_release_states(release, entry: dict) -> None:
    """Every value is the provider dataclass's field, every name in its docstring, and the
    architecture the class the release's bridge registers for the model."""
    provider = entry["provider"]
    root = Path(release(provider["release"]).root)
    fields, doc = _attributes(root / provider["module"], provider["class"])
    assert {k: fields.get(k) for k in entry["values"]} == entry["values"]
    assert all(name in doc for name in entry["names"]), doc
    assert entry["architecture"] in (root / provider["bridge"]).read_text()


def test_a_model_is_found_by_its_hub_id_or_its_directory_name() -> None:
    assert model_facts.lookup("Qwen/Qwen3-235B-A22B").values["num_layers"] == 94
    assert model_facts.lookup("/ckpt/pretrained_models/qwen3-30b-a3b/").values["num_layers"] == 48
    also = model_facts.lookup("${CHATLEARN}/pretrained_models/DeepSeek-V3-0324-BF16")
    assert also is not None and "tutorial_grpo_mcore_moonlight_and_deepseek.md" in also.source
    assert model_facts.lookup("Qwen3-235B") is None


def test_ms_swift_model_sizes_come_from_the_same_facts() -> None:
    """`megatron sft --model Qwen/Qwen3-8B` (modelscope/ms-swift@2d3694fb18
    examples/megatron/rlhf/gkd/dense.sh names Qwen/Qwen3-8B): the sizes rules/models.toml states
    are the run's; the one it does not state (a dense model's experts) stays unknown, not None."""
    from auditor.config.expr import UNKNOWN
    from tests.config.test_effective import derive_text, seed_text

    _, config = derive_text(seed_text().replace("ZhipuAI/GLM-5.1", "Qwen/Qwen3-8B"), torch="2.11.0")
    assert (config.value("num_layers"), config.value("num_attention_heads")) == (36, 32)
    assert config.value("num_moe_experts") is UNKNOWN
    assert config.to_json()["provenance"]["num_layers"] == "Qwen/Qwen3-8B config.json: num_layers=36"


def test_the_most_named_families_are_found_by_their_hub_id() -> None:
    """modelscope/ms-swift@2d3694fb18 examples/megatron/multi-node/node1.sh (`--model
    Qwen/Qwen2.5-14B`, TP 4) and examples/megatron/pretrain.sh (`--model Qwen/Qwen2.5-7B`): the
    sizes are Megatron-Bridge 0.3.1's Qwen25ModelProvider14B/7B. The -Instruct checkpoint is
    another hub id no release here states the sizes of: unknown, naming the `--set`."""
    from auditor.config.expr import UNKNOWN
    from tests.config.test_effective import derive_text, seed_text

    _, config = derive_text(seed_text().replace("ZhipuAI/GLM-5.1", "Qwen/Qwen2.5-14B"), torch="2.11.0")
    assert (config.value("num_layers"), config.value("hidden_size"), config.value("num_attention_heads")) == (48, 5120, 40)
    assert "Qwen25ModelProvider14B" in config.to_json()["sources"]["num_layers"]
    assert model_facts.lookup("Qwen/Qwen2.5-7B").values["num_layers"] == 28
    assert model_facts.lookup("/models/Qwen3-32B").values["num_layers"] == 64
    _, other = derive_text(seed_text().replace("ZhipuAI/GLM-5.1", "Qwen/Qwen2.5-14B-Instruct"), torch="2.11.0")
    assert other.value("num_layers") is UNKNOWN
    assert "--set KEY=N" in other.to_json()["provenance"]["num_layers"]
