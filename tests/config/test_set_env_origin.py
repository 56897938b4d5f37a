"""`--set env.NAME=VALUE` states the job's environment, not a line of the script: a finding it
decides cites the `--set`, and where the script's own value is known at the training command
(its export after every unread `source`) the `--set` is bad input, never a silent override.

The scripts are written after bigcode-project/Megatron-LM examples/finetune_starcoderplus.slurm
(commit 7c325cd34a): `source /admin/home/leandro/.bashrc` (line 11, a file of the cluster's home
directory) before a `python -m torch.distributed.run pretrain_gpt.py` with
--pipeline-model-parallel-size 4; the DETAIL pass of issue 22 adds the export.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import cli
from auditor.config.coerce import overrides_from
from auditor.config.derive import derive
from auditor.config.launch import parse_launch
from auditor.errors import EXIT_INPUT, InputError

COMMAND = """python -u -m torch.distributed.run --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \\
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --num-layers 8 \\
    --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 \\
    --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 16 --train-iters 10
"""
# The export before the unread source: the level at the command is unknown.
BEFORE = f"""#!/bin/bash
# megatron-core==0.17.0
export TORCH_DISTRIBUTED_DEBUG=INFO
source /admin/home/nobody-here/.bashrc
{COMMAND}"""
# The export after it: the script's own level is known at the command.
AFTER = """#!/bin/bash
# megatron-core==0.17.0
source /admin/home/nobody-here/.bashrc
export TORCH_DISTRIBUTED_DEBUG={level}
""" + COMMAND
ROOT = "env.TORCH_DISTRIBUTED_DEBUG"


def _derive(script: str, *sets: str):
    return derive(parse_launch(script, "run.sh"), {"megatron-core": "0.17.0"}, overrides_from(sets), "2.10.0")


def test_a_finding_the_set_decides_cites_the_set_not_the_script_line() -> None:
    config = _derive(BEFORE, f"{ROOT}=DETAIL")
    found = [f for f in config.findings if f.kind == "batch-runs-unbatched"]
    assert found and {f.where for f in found} == {f"--set {ROOT}=DETAIL"}


@pytest.mark.parametrize("level, given", [("DETAIL", "OFF"), ("INFO", "DETAIL")])
def test_a_set_of_a_level_the_script_states_is_bad_input(level: str, given: str) -> None:
    with pytest.raises(InputError) as caught:
        _derive(AFTER.format(level=level), f"{ROOT}={given}")
    assert str(caught.value) == (f"--set {ROOT}={given}: the script sets TORCH_DISTRIBUTED_DEBUG={level} "
                                 f"at run.sh:4; --set {ROOT} decides only a value the script leaves unknown")


def test_the_cli_says_it_in_one_line(capsys, tmp_path: Path) -> None:
    script = tmp_path / "finetune.slurm"
    script.write_text(AFTER.format(level="DETAIL"), encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--torch", "2.10.0", "--set", f"{ROOT}=OFF"])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT and err.count("\n") == 1
    assert f"TORCH_DISTRIBUTED_DEBUG=DETAIL at {script}:4" in err


def test_fix_edits_no_line_for_a_value_the_set_gives(capsys, tmp_path: Path) -> None:
    script = tmp_path / "finetune.slurm"
    script.write_text(BEFORE, encoding="utf-8")
    cli.main(["fix", "--config", str(script), "--torch", "2.10.0", "--set", f"{ROOT}=DETAIL",
              "--no-simulate", "--format", "text"])
    out = "".join(capsys.readouterr())  # the plan is on stderr where the diff is on stdout
    assert f"no patch: TORCH_DISTRIBUTED_DEBUG comes from --set {ROOT}, the job's environment" in out
    assert "does not spell TORCH_DISTRIBUTED_DEBUG" not in out  # no line of the script is its
    assert script.read_text(encoding="utf-8") == BEFORE
