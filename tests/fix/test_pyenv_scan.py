"""The run's entry script is part of the run (issue 24 item 5): what `torchrun ... pretrain_gpt.py`
sets from Python before torch reads it is read as the launch script's exports are, with its
`file:line`; a value the scan cannot know is unknown; a script it cannot find is said."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import parse_launch
from auditor.config.pyenv import locate, read_entry, settings
from auditor.scan import ScanInputs, run_scan

pytestmark = pytest.mark.usefixtures("real_sources")

# As NVIDIA/Megatron-LM core_v0.17.0 examples/llama/train_llama3_8b_h100_fp8.sh starts its
# trainer: `torchrun ... pretrain_gpt.py` from the directory the script runs in.
RUN = """\
#!/bin/bash
# megatron-core==0.17.0
{export}torchrun --nproc_per_node 4 {script} \\
    --pipeline-model-parallel-size 4 \\
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\
    --micro-batch-size 1 --global-batch-size 64 \\
    --bf16
"""

# The head of NVIDIA/Megatron-LM core_v0.17.0 pretrain_gpt.py (its imports, `import os` then
# `import torch` then megatron's), with the debug setting a user adds while chasing a hang the
# way huangrt01/CS-Notes 81f4738680db541a2f7a5120fd843592385e2263
# Notes/snippets/pytorch-debugging.py writes it (`os.environ["TORCH_DISTRIBUTED_DEBUG"] =
# "DETAIL"` beside other variables), here before torch is imported, where torch sees it.
TRAINER = '''\
"""Pretrain GPT."""

import os
os.environ["TORCH_CPP_LOG_LEVEL"]="INFO"
# DETAIL: every collective checked
os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"   # remove after the hang

import torch

from megatron.core.enums import ModelType
from megatron.training import pretrain


if __name__ == "__main__":
    pretrain(None, None, ModelType.encoder_or_decoder, None)
'''


def _scan(tmp_path: Path, run: str, trainer: str | None, script: str = "pretrain_gpt.py") -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "run.sh").write_text(run)
    if trainer is not None:
        path = tmp_path / script
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(trainer)
    return run_scan(ScanInputs(str(tmp_path / "run.sh"), torch_version="2.10.0", progress=False))


def _kinds(doc: dict) -> list[tuple[str, str]]:
    return sorted((f["kind"], f["severity"]) for f in doc["findings"]
                  if not f["kind"].startswith("launch.entry"))


def test_detail_set_in_the_trainer_gives_the_findings_of_detail_exported(tmp_path):
    exported = _scan(tmp_path / "a", RUN.format(export="export TORCH_DISTRIBUTED_DEBUG=DETAIL\n",
                                                script="pretrain_gpt.py"),
                     TRAINER.replace('os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"', "pass"))
    in_python = _scan(tmp_path / "b", RUN.format(export="", script="pretrain_gpt.py"), TRAINER)
    assert _kinds(in_python) == _kinds(exported)
    assert ("batch-runs-unbatched", "error") in _kinds(in_python)
    [cause] = [f for f in in_python["findings"] if f["kind"] == "batch-runs-unbatched"]
    assert cause["where"] == f"{tmp_path / 'b' / 'pretrain_gpt.py'}:6"  # its provenance
    assert in_python["verdict"]["exit_code"] == exported["verdict"]["exit_code"] == 1


def test_the_forms_of_setting_and_a_value_not_known(tmp_path):
    text = '''\
import os
import os as _os
from os import environ
_os.environ.setdefault("TORCH_NCCL_USE_COMM_NONBLOCKING", "1")
os.putenv("NCCL_DEBUG", "INFO")
environ["TORCH_DISTRIBUTED_DEBUG"] = LEVEL
if os.getenv("DEBUG"):
    os.environ["NCCL_ALGO"] = "Ring"
import torch
os.environ["TORCH_NCCL_NONBLOCKING_TIMEOUT"] = "600"
'''
    got = {(s.name, s.line, s.how, str(s.value), s.nested, s.torch_at) for s in settings(text)}
    assert got == {("TORCH_NCCL_USE_COMM_NONBLOCKING", 4, "setdefault", "1", False, 0),
                   ("NCCL_DEBUG", 5, "putenv", "INFO", False, 0),
                   ("TORCH_DISTRIBUTED_DEBUG", 6, "environ", "LEVEL", False, 0),
                   ("NCCL_ALGO", 8, "environ", "Ring", True, 0),
                   ("TORCH_NCCL_NONBLOCKING_TIMEOUT", 10, "environ", "600", False, 9)}
    (tmp_path / "train.py").write_text(text)
    launch = parse_launch(RUN.format(export="export TORCH_NCCL_USE_COMM_NONBLOCKING=0\n",
                                     script="train.py"), str(tmp_path / "run.sh"))
    read_entry(launch)
    env = launch.env
    assert env["TORCH_NCCL_USE_COMM_NONBLOCKING"].value == "0"  # setdefault keeps the export
    assert (env["NCCL_DEBUG"].value, env["NCCL_DEBUG"].where("run.sh")) == (
        "INFO", f"{tmp_path / 'train.py'}:5")
    # A value the scan cannot know is unknown, never absent: a name, a branch.
    assert type(env["TORCH_DISTRIBUTED_DEBUG"].value).__name__ == "Symbolic"
    assert type(env["NCCL_ALGO"].value).__name__ == "Symbolic"
    assert env["TORCH_NCCL_NONBLOCKING_TIMEOUT"].value == "600"  # read later than import


def test_detail_set_after_import_torch_is_not_seen_and_said(tmp_path):
    """torch reads TORCH_DISTRIBUTED_DEBUG once, when it is imported (rules/torch.toml
    `read_at`); measured on 2.13.0: DebugLevel.OFF after `import torch` then the setting."""
    late = TRAINER.replace('# DETAIL: every collective checked\nos.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"   # remove after the hang\n', "").replace(
        "import torch\n", 'import torch\nos.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"\n')
    doc = _scan(tmp_path, RUN.format(export="", script="pretrain_gpt.py"), late)
    assert "batch-runs-unbatched" not in {f["kind"] for f in doc["findings"]}
    [said] = [f for f in doc["findings"] if f["kind"] == "launch.entry-env-late"]
    assert said["where"] == f"{tmp_path / 'pretrain_gpt.py'}:7"
    assert "after torch is imported (line 6)" in said["message"]


def test_a_module_entry_is_resolved_and_a_missing_one_is_said(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pretrain_gpt.py").write_text(TRAINER)
    launch = parse_launch(RUN.format(export="", script="-m pkg.pretrain_gpt"),
                          str(tmp_path / "run.sh"))
    entry, why = locate(launch)
    assert entry is not None and entry.written == "pkg/pretrain_gpt.py" and not why
    read_entry(launch)
    assert launch.env["TORCH_DISTRIBUTED_DEBUG"].where("run.sh") == (
        f"{tmp_path / 'pkg' / 'pretrain_gpt.py'}:6")

    # `-m` runs the package's __init__.py first: torch imported there is imported before.
    (tmp_path / "pkg" / "__init__.py").write_text("from . import data\n")
    launch = parse_launch(RUN.format(export="", script="-m pkg.pretrain_gpt"),
                          str(tmp_path / "run.sh"))
    read_entry(launch)
    assert type(launch.env["TORCH_DISTRIBUTED_DEBUG"].value).__name__ == "Symbolic"
    (tmp_path / "pkg" / "__init__.py").write_text("import os\nimport torch\n")
    launch = parse_launch(RUN.format(export="", script="-m pkg.pretrain_gpt"),
                          str(tmp_path / "run.sh"))
    read_entry(launch)
    assert "TORCH_DISTRIBUTED_DEBUG" not in launch.env
    [late] = [d for d in launch.diagnostics if d.kind == "launch.entry-env-late"]
    assert f"({tmp_path / 'pkg' / '__init__.py'}:2)" in late.message

    missing = _scan(tmp_path / "x", RUN.format(export="", script="pretrain_gpt.py"), None)
    [note] = [f for f in missing["findings"] if f["kind"] == "launch.entry-script"]
    assert note["severity"] == "info" and "pretrain_gpt.py is neither beside" in note["message"]
