"""ROLL's agentic examples compose their Hydra config from a sibling directory:
alibaba/ROLL (commit 8eb27cc2dc34c4d1310b169d9b86d339004d811a)
examples/qwen2.5-7B-agentic_megatron/agentic_val_webshop.yaml begins `defaults:
- ../config/traj_envs@_here_` (examples/config/traj_envs.yaml, inside the checkout), and its run
script run_agentic_pipeline_webshop.sh starts examples/start_agentic_pipeline.py. The roles'
settings are read, not left unknown because the entry climbs out of the config directory.
"""

from __future__ import annotations

from pathlib import Path

from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from tests.realscripts.test_roll import SFT, _read, roll_tree

AGENTIC = "defaults:\n  - ../config/traj_envs@_here_\n\n" + SFT


def test_a_sibling_config_dir_in_the_checkout_is_composed(tmp_path: Path):
    script = roll_tree(tmp_path, "qwen2.5-7B-agentic_megatron", AGENTIC, "agentic_val_webshop", kind="agentic")
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "examples" / "config").mkdir()
    (tmp_path / "examples" / "config" / "traj_envs.yaml").write_text("max_steps: 3\n")
    config = _read(script)
    assert not any(d.kind == "launch.config-file-unread" for d in config.diagnostics)
    assert config.case_name == "sft_train"
    assert config.flags["pipeline_model_parallel_size"].value == "2"


def test_without_the_sibling_file_the_settings_stay_unknown(tmp_path: Path):
    script = roll_tree(tmp_path, "qwen2.5-7B-agentic_megatron", AGENTIC, "agentic_val_webshop", kind="agentic")
    (tmp_path / "setup.py").write_text("")
    config = _read(script)
    assert any(d.kind == "launch.config-file-unread" for d in config.diagnostics)
    eff = derive(config, {"mcore-adapter": "0.10.0.dev0", "megatron-core": "0.15.0"}, torch_version="2.10.0")
    assert eff.values["pipeline_model_parallel_size"].value is UNKNOWN
