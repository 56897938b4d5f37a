"""A config file the trainer reads but this audit cannot is unknown for every setting it may
set, whatever launcher runs it (issue 22 item 5).

The construct: NVIDIA/Megatron-LM core_v0.17.0 (9539a12e1b04) reads `--yaml-cfg FILE` in
megatron/training/arguments.py:106 (yaml_arguments.py:416 `load_yaml`: every other flag is
ignored), and its entries besides pretrain_*.py parse the same arguments: train_rl.py at the
repository's root (`from megatron.training import ...`, initialize_megatron). No `[[stage]]`
lists `torchrun train_rl.py`, so the front end's flag keys are empty: the file's settings must
still be unknown (every front end's keys), never megatron-core's defaults (PP 1, read CLEAN).
"""

from __future__ import annotations

from pathlib import Path

from auditor.bash.values import Symbolic
from auditor.config.configfiles import flag_keys
from auditor.config.launch import read_launch


def _script(root: Path, command: str) -> Path:
    (root / "examples" / "rl").mkdir(parents=True)
    (root / "setup.py").write_text("")
    script = root / "examples" / "rl" / "run.sh"
    script.write_text(f"#!/bin/bash\n{command}\n")
    return script


def test_an_unread_yaml_cfg_of_an_entry_no_stage_names_leaves_the_pipeline_unknown(tmp_path: Path) -> None:
    assert flag_keys("torchrun train_rl.py") == []  # the case: no front end's keys name this launcher
    script = _script(tmp_path, "torchrun --nproc_per_node 8 train_rl.py --yaml-cfg examples/rl/missing.yaml")
    launch = read_launch(script)
    pp = launch.flags["pipeline_model_parallel_size"]
    assert isinstance(pp.value, Symbolic) and "missing.yaml" in str(pp.value)
    assert isinstance(launch.flags["overlap_p2p_comm"].value, Symbolic)
    (unread,) = [d for d in launch.diagnostics if d.kind == "launch.config-file-unread"]
    assert "missing.yaml cannot be read" in unread.message


def test_a_file_the_front_end_names_keeps_its_own_keys(tmp_path: Path) -> None:
    """Where the launcher's front end has keys, those (and only those) are the unknowns."""
    script = _script(tmp_path, "torchrun --nproc_per_node 8 pretrain_gpt.py --yaml-cfg examples/rl/missing.yaml")
    launch = read_launch(script)
    unknown = {k for k, f in launch.flags.items() if isinstance(f.value, Symbolic)}
    assert unknown == set(flag_keys("torchrun pretrain_gpt.py"))


def test_a_yaml_cfg_the_checkout_lacks_does_not_start(tmp_path: Path) -> None:
    """Megatron-LM's load_yaml opens the file in parse_args (yaml_arguments.py:418): a relative
    path absent from every directory where the relative entry opens is a certain stop."""
    (tmp_path / "examples" / "gpt3").mkdir(parents=True)
    (tmp_path / "examples" / "gpt3" / "gpt_config.yaml").write_text("micro_batch_size: 2\n")
    (tmp_path / "pretrain_gpt.py").write_text("from megatron.training import pretrain\n")
    script = _script(tmp_path, "torchrun --nproc_per_node 8 pretrain_gpt.py --yaml-cfg examples/gpt/gpt_config.yaml")
    launch = read_launch(script)
    (stop,) = [d for d in launch.diagnostics if d.kind == "launch.config-file-missing"]
    assert stop.severity == "error" and stop.detail == {"category": "config"} and stop.where == f"{script}:2"
    assert "examples/gpt/gpt_config.yaml" in stop.message and "FileNotFoundError" in stop.message
    # the entry not in the checkout (a path the cluster has): not certain, unknown only
    script.write_text(script.read_text().replace("pretrain_gpt.py", "/opt/megatron/pretrain_gpt.py"))
    assert not any(d.kind == "launch.config-file-missing" for d in read_launch(script).diagnostics)
