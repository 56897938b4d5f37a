"""DOES NOT START because the script exits before its training command: that command is never
read, so a `--set` key naming one of its flags (`--moe-router-dtype`) cannot be told from a key no
rule knows; only a near miss of a known key is refused as a misspelling.

Written after NVIDIA-NeMo/Megatron-Bridge examples/models/deepseek_v4/slurm_pretrain.sh (commit
067f987df03b8355b03192d88d70f1709fedf51a): `CONTAINER_IMAGE=""`, then `if [ -z ... ]; then exit 1`.
"""

from __future__ import annotations

from auditor import cli

EXITS = """#!/bin/bash
CONTAINER_IMAGE=""
if [ -z "$CONTAINER_IMAGE" ]; then
    echo "ERROR: CONTAINER_IMAGE must be set."
    exit 1
fi
srun --container-image=$CONTAINER_IMAGE bash -lc \\
    "torchrun --nproc_per_node=8 pretrain_gpt.py --pipeline-model-parallel-size 4 --moe-router-dtype fp32"
"""


def _scan(capsys, tmp_path, key: str) -> tuple[int, str, str]:
    script = tmp_path / "run.sh"
    script.write_text(EXITS, encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--set", key])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_flag_of_the_unread_command_is_taken(capsys, tmp_path):
    code, out, _ = _scan(capsys, tmp_path, "moe_router_dtype=fp64")
    assert code == 1 and "DOES NOT START" in out


def test_a_near_miss_is_still_a_misspelling(capsys, tmp_path):
    code, out, err = _scan(capsys, tmp_path, "pipline_model_parallel_size=2")
    assert code == 2 and out == "" and "did you mean pipeline_model_parallel_size?" in err
