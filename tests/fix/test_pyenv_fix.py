"""`p2paudit fix` on a setting the entry script makes from Python: the patch edits the Python
file with the libcst codemod (every other byte kept), the re-scan of the patched copies verifies
it, and `--apply` backs up and writes each file, refusing one that changed since the scan."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import cli
from auditor.fix import plan as fix_plan
from auditor.scan import ScanInputs

pytestmark = pytest.mark.usefixtures("real_sources")

# As NVIDIA/Megatron-LM core_v0.17.0 examples/llama/train_llama3_8b_h100_fp8.sh starts it.
RUN = """\
#!/bin/bash
# megatron-core==0.17.0
export TORCH_NCCL_USE_COMM_NONBLOCKING=1
export TORCH_NCCL_NONBLOCKING_TIMEOUT=600
torchrun --nproc_per_node 4 pretrain_gpt.py \\
    --pipeline-model-parallel-size 4 \\
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\
    --micro-batch-size 1 --global-batch-size 64 \\
    --bf16
"""

# The head of NVIDIA/Megatron-LM core_v0.17.0 pretrain_gpt.py with the DETAIL setting written
# as huangrt01/CS-Notes 81f4738680db541a2f7a5120fd843592385e2263
# Notes/snippets/pytorch-debugging.py writes it, before torch is imported.
TRAINER = '''\
"""Pretrain GPT."""

import os
os.environ["TORCH_CPP_LOG_LEVEL"]="INFO"
# DETAIL: every collective checked
os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"   # remove after the hang

import torch

from megatron.training import pretrain
'''


def _files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "run.sh").write_text(RUN)
    (tmp_path / "pretrain_gpt.py").write_text(TRAINER)
    return tmp_path / "run.sh", tmp_path / "pretrain_gpt.py"


def test_the_patch_edits_the_trainer_and_verifies_by_a_rescan(tmp_path):
    script, trainer = _files(tmp_path)
    plan = fix_plan.make(ScanInputs(str(script), torch_version="2.10.0", progress=False),
                         simulate=False)
    assert plan.verified and plan.exit_code == 0
    assert list(plan.patched) == [str(trainer)]  # the launch script needs no edit
    # Every byte but the statement's line kept; its comment above stays.
    assert plan.patched[str(trainer)] == TRAINER.replace(
        'os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"   # remove after the hang\n', "")
    assert "-os.environ[\"TORCH_DISTRIBUTED_DEBUG\"] = \"DETAIL\"" in plan.diff()
    assert plan.outcome is not None and plan.patched_doc is not None
    assert "batch-runs-unbatched" not in {f["kind"] for f in plan.patched_doc["findings"]}
    assert trainer.read_text() == TRAINER  # verified on copies


def test_the_info_option_changes_the_literal_only(tmp_path):
    script, trainer = _files(tmp_path)
    plan = fix_plan.make(ScanInputs(str(script), torch_version="2.10.0", progress=False),
                         {"info"}, simulate=False)
    assert plan.verified
    assert plan.patched[str(trainer)] == TRAINER.replace('= "DETAIL"', '= "INFO"')


def test_apply_backs_up_the_trainer_and_scan_then_exits_0(tmp_path, capsys):
    script, trainer = _files(tmp_path)
    assert cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--no-simulate",
                     "--apply"]) == 0
    assert Path(str(trainer) + ".p2paudit-bak").read_text() == TRAINER
    assert "TORCH_DISTRIBUTED_DEBUG" not in trainer.read_text()
    assert script.read_text() == RUN and not Path(str(script) + ".p2paudit-bak").exists()
    capsys.readouterr()
    assert cli.main(["scan", "--config", str(script), "--torch", "2.10.0"]) == 0


def test_apply_refuses_a_trainer_changed_since_the_scan(tmp_path, capsys):
    from auditor.commands import fix as fix_command
    from auditor.errors import InputError

    script, trainer = _files(tmp_path)
    plan = fix_plan.make(ScanInputs(str(script), torch_version="2.10.0", progress=False),
                         simulate=False)
    trainer.write_text(TRAINER + "# edited meanwhile\n")
    with pytest.raises(InputError, match="changed since the scan"):
        fix_command.apply(plan)
    assert trainer.read_text() == TRAINER + "# edited meanwhile\n"
    assert not Path(str(trainer) + ".p2paudit-bak").exists()


@pytest.mark.parametrize("setting", ['os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"',
                                     'os.environ.setdefault("TORCH_DISTRIBUTED_DEBUG", "DETAIL")'])
def test_detail_exported_and_set_in_python_is_removed_in_both(tmp_path, setting):
    """The export a Python setting replaces, and the setdefault an export keeps, would each set
    DETAIL again once the other is gone: the patch edits both files, and verifies."""
    script, trainer = _files(tmp_path)
    script.write_text(RUN.replace("export TORCH_NCCL_USE_COMM_NONBLOCKING=1\n",
                                  "export TORCH_NCCL_USE_COMM_NONBLOCKING=1\n"
                                  "export TORCH_DISTRIBUTED_DEBUG=DETAIL\n"))
    trainer.write_text(TRAINER.replace('os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"', setting))
    plan = fix_plan.make(ScanInputs(str(script), torch_version="2.10.0", progress=False),
                         simulate=False)
    assert plan.verified, [p.outcome for p in plan.proposals]
    assert sorted(plan.patched) == sorted([str(script), str(trainer)])
    assert plan.patched[str(script)] == RUN
    assert "TORCH_DISTRIBUTED_DEBUG" not in plan.patched[str(trainer)]
