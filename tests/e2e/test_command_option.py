"""`--command 'torchrun ...'` for a script whose training command p2paudit cannot follow: every
command that reads a launch script tells the user to pass it ("give it with --command ..."), but
only `scan` accepted it; `fix`, `gate` and `simulate` said "unrecognized arguments".

The construct is NVIDIA-NeMo/Megatron-Bridge examples/models/gemma/gemma3_vl/sft.sh (067f987df0):
the launcher behind `uv run`, which the reader does not follow.
"""

from __future__ import annotations

import pytest

from auditor import cli
from auditor.errors import EXIT_INPUT

SCRIPT = """#!/bin/bash
# torch==2.10.0 megatron-core==0.17.0
export TORCH_DISTRIBUTED_DEBUG=DETAIL
uv run python -m torch.distributed.run --nproc_per_node=4 pretrain_gpt.py \\
    --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2
"""
COMMAND = ("torchrun --nproc_per_node=4 pretrain_gpt.py --pipeline-model-parallel-size 2 "
           "--tensor-model-parallel-size 2")


@pytest.mark.heavy
@pytest.mark.wheels
@pytest.mark.parametrize("command", ["fix", "gate", "simulate"])
def test_every_command_that_asks_for_command_takes_it(tmp_path, capsys, real_sources, command):
    script = tmp_path / "sft.sh"
    script.write_text(SCRIPT)
    baseline = tmp_path / "base.json"
    cli.main(["scan", "--config", str(script), "--command", COMMAND, "--format", "json",
              "-o", str(baseline)])
    capsys.readouterr()
    extra = {"fix": ["--no-simulate"], "gate": ["--baseline", str(baseline)], "simulate": []}[command]
    code = cli.main([command, "--config", str(script), "--command", COMMAND, *extra])
    out, err = capsys.readouterr()
    assert code != EXIT_INPUT, err
    assert "could not be followed" not in out + err
    if command == "fix":
        assert "-export TORCH_DISTRIBUTED_DEBUG=DETAIL" in out


@pytest.mark.wheels
def test_the_fix_scan_points_to_carries_the_command(tmp_path, capsys, real_sources):
    """The `patch: p2paudit fix ...` line under a finding is pasted as it is: with --command."""
    script = tmp_path / "sft.sh"
    script.write_text(SCRIPT)
    cli.main(["scan", "--config", str(script), "--command", COMMAND])
    out = " ".join(capsys.readouterr().out.split())
    assert f"patch: p2paudit fix --config {script} --command '{COMMAND}'" in out, out
