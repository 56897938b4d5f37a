"""`scan` and `gate` name the command that makes and verifies a cause's patch (issue 24 item 4):
one `patch: p2paudit fix --config ...` line under a cause whose default remedy is an edit, with
the scan's own inputs, computed without a re-scan; the command it names then verifies."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import jsonschema
import pytest

from auditor import cli

pytestmark = pytest.mark.usefixtures("real_sources")

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "schema"
                     / "scan-document.schema.json").read_text())

# As NVIDIA/Megatron-LM core_v0.17.0 examples/llama/train_llama3_8b_h100_fp8.sh starts its
# trainer, with DETAIL set in the trainer (tests/fix/test_pyenv_scan.py says from where).
RUN = """\
#!/bin/bash
# megatron-core==0.17.0
torchrun --nproc_per_node 4 pretrain_gpt.py \\
    --pipeline-model-parallel-size 4 \\
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\
    --micro-batch-size 1 --global-batch-size 64 \\
    --bf16
"""
TRAINER = '''\
import os
os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"  # chasing a hang

import torch
from megatron.training import pretrain
'''


def _files(tmp_path: Path) -> Path:
    (tmp_path / "run.sh").write_text(RUN)
    (tmp_path / "pretrain_gpt.py").write_text(TRAINER)
    return tmp_path / "run.sh"


def test_scan_names_the_fix_command_under_the_cause(tmp_path, capsys):
    script = _files(tmp_path)
    assert cli.main(["scan", "--config", str(script), "--torch", "2.10.0"]) == 1
    out = capsys.readouterr().out
    block = out[out.index("Findings, by cause:"):out.index("Effective config")]
    command = f"p2paudit fix --config {script} --torch 2.10.0"
    assert block.count("patch:") == 1  # one line, under the one cause with an edit remedy
    assert f"patch: {command} (remove TORCH_DISTRIBUTED_DEBUG;" in " ".join(block.split())

    assert cli.main(["scan", "--config", str(script), "--torch", "2.10.0", "--format", "json",
                     "-o", str(tmp_path / "scan.json")]) == 1
    doc = json.loads((tmp_path / "scan.json").read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    pointed = [f for f in doc["findings"] if "fix_command" in f]
    assert [f["kind"] for f in pointed] == ["batch-runs-unbatched"]
    assert pointed[0]["fix_command"]["command"] == command
    assert "patch" not in pointed[0]  # nothing verified by the scan itself

    # The command it names makes the patch and verifies it.
    capsys.readouterr()
    argv = shlex.split(command)[1:] + ["--no-simulate"]
    assert cli.main(argv) == 0
    assert '-os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"' in capsys.readouterr().out


def test_gate_points_each_new_failure_to_the_fix(tmp_path, capsys):
    script = _files(tmp_path)
    baseline = tmp_path / "baseline.json"
    cli.main(["scan", "--config", str(script), "--torch", "2.11.0", "--format", "json",
              "-o", str(baseline)])
    capsys.readouterr()
    assert cli.main(["gate", "--config", str(script), "--baseline", str(baseline),
                     "--torch", "2.10.0"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    new = out.count("ERROR gate-new-contradiction")
    assert new == 5
    assert out.count(f"patch: p2paudit fix --config {script} --target megatron-core==0.17.0 "
                     "--torch 2.10.0 (remove TORCH_DISTRIBUTED_DEBUG;") == new
