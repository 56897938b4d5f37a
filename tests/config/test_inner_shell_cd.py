"""A `cd` inside a shell of its own (`bash -c`, `( ... )`) moves the commands after it in that
shell, and only those.

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit 067f987df03b8355b03192d88d70f1709fedf51a)
examples/megatron_mimo/qwen35_vl/slurm_sft.sh: a quoted here-document RUN_CMD (:205-237) starts with
`cd /opt/Megatron-Bridge` (the container's checkout) and runs `uv run --no-sync python
examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py ...`; each pass of a loop over the nodes
(:261-280) appends `bash -lc "${RUN_CMD}"` to an srun array run at :296. The entry opened is
/opt/Megatron-Bridge/examples/..., whose parser is read from the checkout around the launch script
at the same tail.
"""

from __future__ import annotations

from auditor.config.launch import parse_launch

ENTRY = '''import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--hf-model", type=str)
parser.add_argument("--dataset-name", type=str)
args = parser.parse_args()
'''

SLURM = """#!/bin/bash
#SBATCH --nodes=3
set -euo pipefail
RUN_CMD=$(cat <<'END'
set -euo pipefail
cd /opt/Megatron-Bridge
cmd=(
    uv run --no-sync python
    examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py
    --hf-model "Qwen/Qwen3.5-27B"
    --dataset-name cord_v2
)
"${cmd[@]}"
END
)
mapfile -t PACKED_NODES < <(scontrol show hostnames "${SLURM_JOB_NODELIST}")
srun_cmd=(srun -l --kill-on-bad-exit=1)
for node_index in "${!PACKED_NODES[@]}"; do
    srun_cmd+=(--nodes=1 --ntasks=8 --nodelist="${PACKED_NODES[$node_index]}" bash -lc "${RUN_CMD}")
done
"${srun_cmd[@]}"
"""


def _checkout(tmp_path, script: str):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'megatron-bridge'\n")
    folder = tmp_path / "examples" / "megatron_mimo" / "qwen35_vl"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "finetune_qwen35_vl.py").write_text(ENTRY)
    launch = folder / "slurm_sft.sh"
    launch.write_text(script)
    return parse_launch(script, str(launch))


def test_a_cd_in_bash_c_moves_the_command_after_it(tmp_path) -> None:
    config = _checkout(tmp_path, SLURM)
    assert config.workdir == "/opt/Megatron-Bridge"
    # the entry's parser is read from the checkout at the path's tail (frontend_parser.find_script):
    # no "whether its parser accepts --hf-model" left open
    assert not any(d.kind == "launch.front-end-unread" for d in config.diagnostics)
    # on a branch of the inner shell, the `cd` may not run: the directory is not known
    config = _checkout(tmp_path, SLURM.replace("cd /opt/Megatron-Bridge",
                                               'if [ -d /opt/Megatron-Bridge ]; then cd /opt/Megatron-Bridge; fi'))
    assert config.workdir is None


def test_a_subshell_s_cd_does_not_move_the_commands_after_it(tmp_path) -> None:
    config = _checkout(tmp_path, "(cd /opt/elsewhere && ls)\n"
                                 "torchrun --nproc_per_node 2 examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py "
                                 "--hf-model x\n")
    assert config.workdir == ""
