"""`sbatch FILE` of a job file in the checkout is followed into FILE with the environment the
caller exports and the allocation FILE's `#SBATCH` lines and the sbatch options ask for (issue 22
items 4 and 9, turn 11).

The scripts reproduce NVIDIA-NeMo/RL at commit 7ea279abfbeb698b092856d0dab61e7cf39bc909:
examples/nemo_gym/nemotron-3-super/super_launch.sh builds the run as a string, `export
COMMAND="export HF_MODULES_CACHE=... ; NRL_WG_USE_RAY_REF=1 ... python
./examples/nemo_gym/run_grpo_nemo_gym.py --config ..."` (:141-172), after `cd "${SNAPSHOT_DIR}"`
(:128, a copy of the checkout), and submits `SBATCH_CMD=(sbatch --nodes=... --account=...
ray.sub)`, `"${SBATCH_CMD[@]}"` (:212-234). ray.sub (the checkout's root) begins with `#SBATCH
--nodes=2` (:2), takes `COMMAND=${COMMAND:-}` (:101), writes it with `printf '%s' "$COMMAND" >
"$DRIVER_COMMAND_FILE"` (:224-228), builds the head's script as `head_cmd=$(cat <<EOF ... bash
"$DRIVER_COMMAND_FILE" ... EOF )` (:599-834; its comments hold lone `'`) and runs it with `srun
... bash -x -c "$head_cmd" &` (:1049).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.lexer import Lexer, Word
from auditor.bash.values import Field, Partial, Symbolic
from auditor.bash.written import cat_document, output
from auditor.config.batch_job import allocation_options, job_file_at
from auditor.config.launch import CommandNotFollowed, parse_launch
from auditor.rulebook.launchers import Spelling

RAY_SUB = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --exclusive
#SBATCH --account=ACCOUNT

set -eoux pipefail
COMMAND=${COMMAND:-}  # This is a script relative to the SLURM_SUBMIT_DIR.
BASE_LOG_DIR=${BASE_LOG_DIR:-$SLURM_SUBMIT_DIR}
LOG_DIR="$BASE_LOG_DIR/$SLURM_JOB_ID-logs"
mkdir -p $LOG_DIR
GPUS_PER_NODE=${GPUS_PER_NODE:-8}

# Write COMMAND to a file so the head container can run it without heredoc/quoting
# issues. Its presence is also how the head decides non-interactive vs interactive.
DRIVER_COMMAND_FILE=""
if [[ -n "$COMMAND" ]]; then
  DRIVER_COMMAND_FILE="$LOG_DIR/driver_command.sh"
  printf '%s' "$COMMAND" > "$DRIVER_COMMAND_FILE"
  chmod +x "$DRIVER_COMMAND_FILE"
fi

TOPO_PROBE_SCRIPT="$LOG_DIR/topology_probe.sh"
cat > "$TOPO_PROBE_SCRIPT" <<TOPO_PROBE_EOF
RAY_RESOURCES='{\\"worker_units\\": '"$GPUS_PER_NODE"
export RAY_RESOURCES
TOPO_PROBE_EOF

head_cmd=$(cat <<EOF
source $LOG_DIR/topology_probe.sh
# If this node can't see the canary, LOG_DIR is not shared. Fail now.
if [[ ! -f "$LOG_DIR/.shared_fs_canary" ]]; then
  exit 1
fi
if [[ -n "$DRIVER_COMMAND_FILE" ]]; then
  set +e
  bash "$DRIVER_COMMAND_FILE" > "$LOG_DIR/ray-driver.log" 2>&1
  exit_code=\\$?
  exit \\$exit_code
else
  sleep infinity
fi
EOF
)

srun --container-name=ray-head --nodes=1 --ntasks=1 -w "$head_node" -o $LOG_DIR/ray-head.log bash -x -c "$head_cmd" &
wait
"""

LAUNCH = """#!/usr/bin/env bash
set -euo pipefail
SNAPSHOT_DIR=$(realpath "$(bash tools/code_snapshot.sh run)")
cd "${SNAPSHOT_DIR}"
export COMMAND="export HF_MODULES_CACHE=/cache ; \\
    python -c \\"from transformers import AutoConfig; p='${MODEL_PATH}'\\" ; \\
    date ; \\
    NRL_WG_USE_RAY_REF=1 \\
    torchrun --nproc_per_node 8 pretrain_gpt.py --load ${MODEL_PATH} \\
    --pipeline-model-parallel-size 2"
SBATCH_CMD=(
    sbatch
    --nodes=4
    --account="acct"
    -J grpo
    ray.sub
)
"${SBATCH_CMD[@]}"
"""


def _checkout(tmp_path: Path, job: str = RAY_SUB, name: str = "ray.sub") -> Path:
    """A checkout (its root holds pyproject.toml) with the job file at its root and the launch
    script two directories down, as NeMo-RL's examples/nemo_gym/nemotron-3-super/."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / name).write_text(job)
    launch = tmp_path / "examples" / "run"
    launch.mkdir(parents=True)
    return launch / "launch.sh"


def test_a_heredoc_inside_a_command_substitution_is_one_word() -> None:
    # bash reads the here-document of `$(cat <<EOF` to its delimiter; a lone `'` in it is text
    tokens = Lexer("X=$(cat <<EOF\nit's (here\nEOF\n)\necho done\n", "t.sh").tokens()
    words = [t.raw for t in tokens if isinstance(t, Word)]
    assert words == ["X=$(cat <<EOF\nit's (here\nEOF\n)", "echo", "done"]


def test_sbatch_of_a_job_file_reaches_the_command_it_runs(tmp_path: Path) -> None:
    path = _checkout(tmp_path)
    config = parse_launch(LAUNCH, str(path))
    assert config.launcher.startswith("torchrun")
    assert config.flags["pipeline_model_parallel_size"].value == "2"
    assert config.world_size == 8  # torchrun's own one node of 8, wherever srun starts it
    assert "NRL_WG_USE_RAY_REF" in config.env
    assert any(d.kind == "launch.job-file" for d in config.diagnostics)
    # the command as the launch script wrote it into COMMAND (the warm-up `python -c` is no run)
    assert config.command_line == 5
    # the file the job wrote and sourced was read: nothing unseen may set the environment
    assert not any(d.kind == "launch.unknown-settings" for d in config.diagnostics)


def test_an_unexported_command_does_not_reach_the_job(tmp_path: Path) -> None:
    # sbatch passes the environment, not the caller's shell variables: COMMAND is empty there
    path = _checkout(tmp_path)
    with pytest.raises(CommandNotFollowed) as caught:
        parse_launch(LAUNCH.replace("export COMMAND=", "COMMAND="), str(path))
    assert "reads COMMAND, which the script sets at line 5 without `export`" in str(caught.value)


def test_a_command_given_as_the_sbatch_prefix_reaches_the_job(tmp_path: Path) -> None:
    """NVIDIA-NeMo/RL examples/nemo_gym/launch_nemo_gym_multinode_training.sh (same commit) reads
    the run into COMMAND from a heredoc without `export` (:22-34) and submits `COMMAND=$COMMAND
    CONTAINER=... sbatch ... ray.sub` (:42-52): the prefix puts it in sbatch's environment."""
    path = _checkout(tmp_path)
    text = LAUNCH.replace("export COMMAND=", "COMMAND=").replace('"${SBATCH_CMD[@]}"', "")
    text += "COMMAND=$COMMAND \\\nMOUNTS=/a:/a \\\nsbatch --nodes=4 ray.sub\n"
    config = parse_launch(text, str(path))
    assert config.launcher.startswith("torchrun")
    assert config.flags["pipeline_model_parallel_size"].value == "2"
    assert not any(d.kind == "launch.not-exported-to-job" for d in config.diagnostics)


JOB = """#!/bin/bash
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=8
srun bash -c "$COMMAND"
"""


def test_the_sbatch_options_beat_the_job_files_directives(tmp_path: Path) -> None:
    path = _checkout(tmp_path, JOB, "job.sh")
    text = ('export COMMAND="python pretrain_gpt.py --pipeline-model-parallel-size 2"\n'
            "cd /nowhere\nsbatch -N 4 --account acct job.sh\n")
    config = parse_launch(text, str(path))
    assert (config.nnodes, config.nproc_per_node, config.world_size) == (4, 8, 32)
    assert "SLURM_NNODES=4 (line 3)" in config.world_source["nnodes"]
    assert "#SBATCH at line 3 of job.sh" in config.world_source["nproc_per_node"]


def test_a_command_not_known_statically_is_named(tmp_path: Path) -> None:
    path = _checkout(tmp_path, JOB, "job.sh")
    with pytest.raises(CommandNotFollowed) as caught:
        parse_launch('export COMMAND="$(cat run.txt)"\ncd /nowhere\nsbatch job.sh\n', str(path))
    assert "runs `$(cat run.txt)`, which is not known statically" in str(caught.value)


def test_an_undecided_nemo_rl_config_may_set_any_setting(tmp_path: Path) -> None:
    # NVIDIA-NeMo/RL 7ea279abfb examples/nemo_gym/nemotron-3-super/super_launch.sh:8, :162: the
    # config is the caller's `--config ${CONFIG_PATH}`, which may set any setting, the workers'
    # env_vars and model_overrides: the run's stack is undecided, naming the config
    # (tests/realscripts/test_nemo_rl_env_vars.py)
    path = _checkout(tmp_path, JOB, "job.sh")
    config = parse_launch("uv run python examples/run_grpo.py --config ${CONFIG_PATH}\n", str(path))
    [undecided] = [d for d in config.diagnostics if d.kind == "launch.unknown-stack"]
    assert "--config ${CONFIG_PATH}" in undecided.message


TRIM = """#!/usr/bin/env bash
export MODEL_PATH="${MODEL_PATH:-/path/to/checkpoint}"
while [[ "${MODEL_PATH}" == */ && "${MODEL_PATH}" != "/" ]]; do
    MODEL_PATH="${MODEL_PATH%/}"
done
torchrun --nproc_per_node 8 pretrain_gpt.py --load ${MODEL_PATH} --pipeline-model-parallel-size 2
"""


def test_a_loop_whose_test_fails_at_entry_leaves_its_variables(tmp_path: Path) -> None:
    # NVIDIA-NeMo/RL 7ea279abfb super_omni_launch.sh:20, :31-33: the `&&` of `[[ ]]` is decided
    # too, and a value with no trailing `/` never enters the loop that trims it
    config = parse_launch(TRIM, str(tmp_path / "launch.sh"))
    assert config.flags["load"].value == "/path/to/checkpoint"
    trailing = parse_launch(TRIM.replace("/path/to/checkpoint", "/path/to/checkpoint/"), str(tmp_path / "l.sh"))
    assert not isinstance(trailing.flags["load"].value, str)  # the loop runs: `%/` is not read here
    either = parse_launch(TRIM.replace("&&", "||"), str(tmp_path / "l.sh"))
    assert not isinstance(either.flags["load"].value, str)  # `!= "/"` holds: the loop runs


def test_sbatch_options_that_take_a_value_are_skipped_to_the_job_file() -> None:
    spelling = Spelling.load(None)
    words = ["-A", "acct", "--nodes=4", "--exclusive", "-J", "grpo", "-N4", "ray.sub", "x"]
    fields = [Field(w, 1) for w in words]
    assert job_file_at(fields, spelling) == 7
    assert allocation_options(fields[:7], spelling)["SLURM_NNODES"] == "4"
    # `--nodes="$(...)"` (super_omni_launch.sh:231): an option, its value not known; a word not
    # known from its start may be the file itself
    nodes = Partial("--nodes=$(x)", (("--nodes=", False), ("$(x)", True)))
    assert job_file_at([Field(nodes, 1), Field("ray.sub", 1)], spelling) == 1
    assert job_file_at([Field(Symbolic("$JOB"), 1), Field("ray.sub", 1)], spelling) is None


def test_what_a_write_puts_in_its_file() -> None:
    assert cat_document("cat <<EOF\nA $X\nEOF\n") is not None
    assert cat_document("cat <<EOF\nA\nEOF\necho more") is None  # another command after it
    assert output("printf", [Field("%s", 1), Field("python x.py", 1)], None) == "python x.py"
    assert output("printf", [Field("%d", 1), Field("1", 1)], None) is None
    assert output("echo", [Field("a", 1), Field("b", 1)], None) == "a b\n"
    assert output("echo", [Field("-e", 1), Field("a", 1)], None) is None


def test_srun_of_a_job_file_by_its_path_reads_it(tmp_path: Path) -> None:
    # `srun ./job.sh`: srun runs the file itself, which its `#!` line hands to bash
    (tmp_path / "job.sh").write_text("#!/usr/bin/env bash\npython pretrain_gpt.py --pipeline-model-parallel-size 2\n")
    config = parse_launch(f"srun -N 2 --ntasks-per-node 8 {tmp_path}/job.sh\n", str(tmp_path / "launch.sh"))
    assert config.launcher.startswith("srun") and config.world_size == 16
