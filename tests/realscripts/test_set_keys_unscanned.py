"""Issue 22 item 12 on the runs `scan` answers without a scan (NOT A PIPELINE RUN, DOES NOT START,
not followed): a misspelt `--set` key is bad input (exit 2, one line with the closest known key)
there too, never accepted silently because the run was decided before the settings were read.

EXPORT is written after modelscope/ms-swift examples/megatron/export/full.sh (commit
2d3694fb1862b83a9633a95c5a51607b07198034): `NPROC_PER_NODE=4 megatron export ... --to_mcore true`.
EXITS after NVIDIA-NeMo/Megatron-Bridge examples/models/deepseek_v4/slurm_pretrain.sh (commit
067f987df03b8355b03192d88d70f1709fedf51a): `CONTAINER_IMAGE=""`, then `if [ -z ... ]; then exit 1`.
HIDDEN runs its training command from a file the script writes at run time, as Megatron-LM
launchers that `bash $RUN_SCRIPT` do (nothing to follow statically).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import cli

EXPORT = """NPROC_PER_NODE=4 \\
megatron export \\
    --model Qwen/Qwen3-30B-A3B-Instruct-2507 \\
    --to_mcore true \\
    --pipeline_model_parallel_size 2
"""

EXITS = """#!/bin/bash
CONTAINER_IMAGE=""
if [ -z "$CONTAINER_IMAGE" ]; then
    echo "ERROR: CONTAINER_IMAGE must be set."
    exit 1
fi
srun --container-image=$CONTAINER_IMAGE bash -lc \\
    "torchrun --nproc_per_node=8 pretrain_gpt.py --pipeline-model-parallel-size 4 --moe-router-dtype fp32"
"""

HIDDEN = """RUN_SCRIPT=$(mktemp)
echo "torchrun pretrain_gpt.py --pipeline-model-parallel-size 4" > $RUN_SCRIPT
$LAUNCHER $RUN_SCRIPT
"""


def _scan(capsys, tmp_path: Path, text: str, *sets: str) -> tuple[int, str, str]:
    script = tmp_path / "run.sh"
    script.write_text(text, encoding="utf-8")
    args = [a for s in sets for a in ("--set", s)]
    code = cli.main(["scan", "--config", str(script), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(("text", "decided"), [(EXPORT, 0), (EXITS, 1), (HIDDEN, 1)],
                         ids=["not-pipeline", "does-not-start", "not-followed"])
def test_a_misspelt_key_is_bad_input_whatever_the_run(capsys, tmp_path, text, decided):
    code, out, err = _scan(capsys, tmp_path, text, "pipline_model_parallel_size=2")
    lines = err.strip().splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 and "--set pipline_model_parallel_size" in lines[0]
    assert "did you mean pipeline_model_parallel_size?" in lines[0]
    # spelt right, the same run keeps its answer
    code, out, _ = _scan(capsys, tmp_path, text, "pipeline_model_parallel_size=2")
    assert code == decided and out


def test_a_flag_of_the_run_as_read_is_a_known_key(capsys, tmp_path):
    code, out, _ = _scan(capsys, tmp_path, EXPORT, "to_mcore=false")
    assert code == 0 and "NOT A PIPELINE RUN" in out


def test_a_flag_of_a_command_after_a_sure_exit_is_taken(capsys, tmp_path):
    """The script exits before its training command, which is never read: a key naming one of
    its flags (`--moe-router-dtype`) cannot be told from a key no rule knows, so it is taken."""
    code, out, _ = _scan(capsys, tmp_path, EXITS, "moe_router_dtype=fp64")
    assert code == 1 and "DOES NOT START" in out


def test_an_unread_run_still_takes_a_key_its_code_may_test(capsys, tmp_path):
    """Not followed: the guards of its code were never read, so a key far from every known one
    may be one of them (the full scan accepts a guard's name); only a near miss is a typo."""
    code, out, _ = _scan(capsys, tmp_path, HIDDEN, "zz_custom_switch=1")
    assert code == 1 and "INCONCLUSIVE" in out and "--command" in out


@pytest.mark.parametrize("command", [["simulate"], ["fix"]])
def test_commands_that_refuse_the_run_name_the_misspelt_key_first(capsys, tmp_path, command):
    """simulate and fix need a pipeline run and refuse this one (exit 2): a misspelt key is the
    error they name, as scan does, and spelt right the refusal names the run. (gate passes such
    a run: tests/e2e/test_gate_not_pipeline.py.)"""
    script = tmp_path / "run.sh"
    script.write_text(EXPORT, encoding="utf-8")
    capsys.readouterr()
    for key, said in (("pipline_model_parallel_size", "did you mean pipeline_model_parallel_size?"),
                      ("pipeline_model_parallel_size", "not a pipeline run")):
        code = cli.main([*command, "--config", str(script), "--set", f"{key}=2"])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and said in lines[0]
