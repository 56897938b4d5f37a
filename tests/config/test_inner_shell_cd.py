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


def test_an_inner_shell_starts_in_its_prefix_s_working_directory(tmp_path) -> None:
    """`srun --chdir=DIR bash -c "cd tools && python ..."` (review of h37-detail's reading): the
    inner shell starts in DIR, so its relative `cd` moves to DIR/tools; with DIR not known
    statically, the start and so the `cd` from it are not known (before: the launch directory's
    tools/, a guess where the entry is looked up)."""
    run = 'bash -c "cd tools && torchrun --nproc_per_node 2 train.py --hf-model x"\n'
    assert _checkout(tmp_path, f"srun --chdir=/opt/mb {run}").workdir == "/opt/mb/tools"
    assert _checkout(tmp_path, f"srun -D /opt/mb {run}").workdir == "/opt/mb/tools"
    assert _checkout(tmp_path, "srun --chdir=/opt/mb bash -c 'torchrun --nproc_per_node 2 train.py'\n").workdir == "/opt/mb"
    assert _checkout(tmp_path, f"srun --chdir=$DIR {run}").workdir is None
    assert _checkout(tmp_path, f"srun {run}").workdir == "tools"


def test_a_job_s_inner_shell_starts_in_the_submit_directory(tmp_path) -> None:
    """NVIDIA-NeMo/RL 7ea279abfb ray.sub:255 (`--container-workdir=$SLURM_SUBMIT_DIR`), submitted
    by examples/nemo_gym/nemotron-3-super-omni/super_omni_launch.sh:129 after `cd` to its code
    snapshot: sbatch gives the job SLURM_SUBMIT_DIR, the directory it was invoked from (the job
    file is read from the checkout, batch_job.in_checkout). Without it, reading the srun prefix's
    working directory made this start unknown, where the submit directory is known."""
    sub = tmp_path / "snapshot"
    sub.mkdir()
    (tmp_path / "job.sub").write_text('#!/bin/bash\nsrun --container-workdir=$SLURM_SUBMIT_DIR bash -c '
                                 '"torchrun --nproc_per_node 2 train.py --hf-model x"\n')
    assert _checkout(tmp_path, f"cd {sub}\nsbatch --nodes=1 job.sub\n").workdir == str(sub)
