"""A defaults entry that climbs out of the config directory (`../config/traj_envs@_here_`), read
as Hydra's file config source reads it: `os.path.realpath(os.path.join(CONFIG_DIR, NAME.yaml))`
(facebookresearch/hydra, hydra/_internal/core_plugins/file_config_source.py). Inside the checkout
the file is read and merged where `@_here_` puts it (the including file's own package); outside
the checkout it stays unknown (this machine's tree says nothing about the cluster's there).

The shape follows alibaba/ROLL (commit 8eb27cc2dc34c4d1310b169d9b86d339004d811a)
examples/agentic_demo/agent_val_frozen_lake_single_node_demo.yaml, whose `defaults:` is
`- ../config/traj_envs@_here_` (the file examples/config/traj_envs.yaml).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.hydra_compose import Unreadable, compose


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_a_parent_entry_inside_the_checkout_merges_here(tmp_path):
    root = _write(tmp_path, {
        "setup.py": "",
        "examples/config/traj_envs.yaml": "max_steps: 3\nactor_train:\n  strategy: megatron_train\n",
        "examples/agentic_demo/agent.yaml": "defaults:\n  - ../config/traj_envs@_here_\n\nseed: 42\n",
    })
    composed = compose(root / "examples/agentic_demo", "agent", root=root)
    assert composed.data == {"max_steps": 3, "actor_train": {"strategy": "megatron_train"}, "seed": 42}
    assert [p.name for p in composed.files] == ["agent.yaml", "traj_envs.yaml"]


def test_a_parent_entry_outside_the_checkout_stays_unknown(tmp_path):
    _write(tmp_path, {"outside/traj_envs.yaml": "max_steps: 3\n",
                      "repo/setup.py": "",
                      "repo/conf/agent.yaml": "defaults:\n  - ../../outside/traj_envs@_here_\n"})
    with pytest.raises(Unreadable, match="out of the checkout"):
        compose(tmp_path / "repo/conf", "agent", root=tmp_path / "repo")


def test_without_a_checkout_a_parent_entry_stays_unknown(tmp_path):
    _write(tmp_path, {"config/traj_envs.yaml": "max_steps: 3\n",
                      "demo/agent.yaml": "defaults:\n  - ../config/traj_envs\n"})
    with pytest.raises(Unreadable, match="out of the config directory"):
        compose(tmp_path / "demo", "agent")


def test_a_link_out_of_the_checkout_stays_unknown(tmp_path):
    _write(tmp_path, {"elsewhere/traj_envs.yaml": "max_steps: 3\n", "repo/setup.py": "",
                      "repo/conf/agent.yaml": "defaults:\n  - ../shared/traj_envs\n"})
    (tmp_path / "repo/shared").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(Unreadable, match="out of the checkout"):
        compose(tmp_path / "repo/conf", "agent", root=tmp_path / "repo")


def test_here_package_of_a_group_entry_merges_at_the_including_level(tmp_path):
    root = _write(tmp_path, {"envs/frozen.yaml": "size: 4\n",
                             "main.yaml": "defaults:\n  - envs@_here_: frozen\n  - _self_\nseed: 1\n"})
    assert compose(root, "main").data == {"size": 4, "seed": 1}
