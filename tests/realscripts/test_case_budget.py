"""One budget of case scans per script, shared by its training commands (issue 22, sweep): a
script that runs the same command four times, each with a setting the verdict rests on left
unknown, took four budgets (62 scans, > 200 s) and timed out. Past the shared budget a command
is judged at its own settings and stays undecided, saying "not judged: budget" (fail closed).

The shape is Megatron-Bridge's examples/models/gpt_oss/inference.sh (NVIDIA-NeMo/Megatron-Bridge,
commit 067f987df03b8355b03192d88d70f1709fedf51a): the same `python -m torch.distributed.run`
command run once, then again under `if [ -d "$MEGATRON_MODEL_PATH" ]; then ... fi` and two more
such blocks. Here the command is Megatron-LM's pretrain_gpt.py with PP a positional argument
(`PP=$1`, as Pai-Megatron-Patch's run_mcore_*.sh), so each command is judged at PP 1, 2 and 4.
"""

from __future__ import annotations

from auditor import scan
from auditor.scan import ScanInputs, run_scan

COMMAND = """torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 \\
    --num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 \\
    --micro-batch-size 1 --global-batch-size 16 --pipeline-model-parallel-size ${PP} --bf16
"""

SCRIPT = f"""#!/bin/bash
# megatron-core==0.17.0
# torch==2.13.0
PP=$1
{COMMAND}
if [ -d "$MEGATRON_MODEL_PATH" ]; then
    {COMMAND}
fi
"""


def test_the_commands_of_a_script_share_one_case_budget(tmp_path, monkeypatch, capsys):
    """With a budget of 3 case scans (one command's PP 1, 2, 4), the first command is judged at
    each PP and the second is not: before, each command had a budget of its own."""
    monkeypatch.setattr(scan, "CASE_SCANS", 3)
    monkeypatch.setenv("P2PAUDIT_PROGRESS_SECONDS", "0.01")
    script = tmp_path / "inference.sh"
    script.write_text(SCRIPT)
    doc = run_scan(ScanInputs(str(script), jobs=1))
    commands = doc["config"]["command_basis"]["commands"]
    assert [c["status"] for c in commands] == ["clean", "inconclusive"], doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "inconclusive"
    budget = [u for u in doc["verdict"]["undecided"] if u["what"].startswith("not judged: budget")]
    assert budget and budget[0]["decide"] == "--set pipeline_model_parallel_size=VALUE", doc["verdict"]
    assert "p2paudit: scanning inference.sh: command " in capsys.readouterr().err


def test_a_budget_that_covers_every_command_judges_each(tmp_path, monkeypatch):
    monkeypatch.setattr(scan, "CASE_SCANS", 6)
    script = tmp_path / "inference.sh"
    script.write_text(SCRIPT)
    doc = run_scan(ScanInputs(str(script), jobs=1))
    assert [c["status"] for c in doc["config"]["command_basis"]["commands"]] == ["clean", "clean"]
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
