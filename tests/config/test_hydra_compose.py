"""A Hydra config composed as `compose(config_name=NAME)` composes it (config/hydra_compose.py):
defaults lists, `_self_`, group packages, `${...}` interpolations, and ROLL's device mappings.

The YAML shapes follow alibaba/ROLL (commit 8eb27cc2dc34c4d1310b169d9b86d339004d811a)
examples/qwen3-235BA22B-rlvr_megatron/rlvr_config_140GB.yaml (`offload_nccl: ${offload_nccl}`,
`device_mapping: list(range(0,64))`) and a `defaults:` list as Hydra's docs write one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.hydra_compose import Unreadable, Unresolved, compose, device_count


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_defaults_merge_before_the_files_own_keys(tmp_path):
    root = _write(tmp_path, {
        "base.yaml": "actor_train:\n  strategy_args:\n    strategy_config:\n"
                     "      pipeline_model_parallel_size: 4\n      tensor_model_parallel_size: 2\n",
        "main.yaml": "defaults:\n  - base\n\nactor_train:\n  strategy_args:\n    strategy_config:\n"
                     "      pipeline_model_parallel_size: 2\n",
    })
    composed = compose(root, "main")
    config = composed.data["actor_train"]["strategy_args"]["strategy_config"]
    assert config == {"pipeline_model_parallel_size": 2, "tensor_model_parallel_size": 2}
    assert [p.name for p in composed.files] == ["main.yaml", "base.yaml"]


def test_self_first_lets_the_defaults_win(tmp_path):
    root = _write(tmp_path, {"base.yaml": "pp: 4\n", "main.yaml": "defaults:\n  - _self_\n  - base\npp: 2\n"})
    assert compose(root, "main").data["pp"] == 4


def test_a_group_default_goes_under_its_group(tmp_path):
    root = _write(tmp_path, {
        "strategy/megatron.yaml": "pipeline_model_parallel_size: 2\n",
        "strategy/flat.yaml": "# @package _global_\nseed: 7\n",
        "main.yaml": "defaults:\n  - strategy: megatron\n  - override strategy@extra: flat\n",
    })
    data = compose(root, "main").data
    assert data["strategy"] == {"pipeline_model_parallel_size": 2}
    assert data["seed"] == 7


def test_interpolations_of_literals_resolve_and_others_stay_unknown(tmp_path):
    root = _write(tmp_path, {"main.yaml": (
        "exp_name: qwen\noffload_nccl: false\npp: 8\n"
        "actor_train:\n  offload_nccl: ${offload_nccl}\n  dir: ./models/${exp_name}\n  pp: ${pp}\n"
        "  home: ${oc.env:HOME}\n  missing: ${nowhere.key}\n")})
    actor = compose(root, "main").data["actor_train"]
    assert actor["offload_nccl"] is False and actor["pp"] == 8 and actor["dir"] == "./models/qwen"
    assert isinstance(actor["home"], Unresolved) and isinstance(actor["missing"], Unresolved)


def test_a_missing_config_is_unreadable_not_empty(tmp_path):
    with pytest.raises(Unreadable, match=r"Cannot find primary config 'rlvr_config' \(no "):
        compose(tmp_path, "rlvr_config")
    _write(tmp_path, {"main.yaml": "defaults:\n  - absent\n"})
    with pytest.raises(Unreadable, match="absent.yaml does not exist"):
        compose(tmp_path, "main")


def test_device_mappings_as_roll_evaluates_them():
    assert device_count("list(range(0,64))") == 64
    assert device_count("list(range(12, 16))") == 4
    assert device_count("list(range(0,16,2))") == 8
    assert device_count([0, 1, 2]) == 3
    assert device_count(None) is None
    assert isinstance(device_count("some_function()"), Unresolved)
