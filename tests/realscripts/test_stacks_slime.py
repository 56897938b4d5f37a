"""Issue 22 item 9: slime as a stack. `ray job submit ... -- python3 train.py <flags>` is a slime
run: ray runs the command after `--`, train.py hands its flags to Megatron-LM's own parse_args
(slime's flags added by `extra_args_provider`), and its actors train with megatron-core's
schedules; slime places actor_num_nodes x actor_num_gpus_per_node training ranks
(rules/slime.toml).

The script is written after THUDM/slime scripts/run-qwen3-4B.sh (commit
624b824a898ab0ec1fcb4d373004c7f3852bf515): model flags in an array from a `source`d file beside
it, PERF_ARGS with TP=2 PP=1, `--actor-num-gpus-per-node ${NUM_GPUS}` where NUM_GPUS comes from
nvidia-smi, the runtime environment as a JSON string, `ray job submit --address=... -- python3
train.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.config.derive import derive
from auditor.config.launch import parse_launch

ROOT = Path(__file__).resolve().parents[2]

MODEL = """MODEL_ARGS=(
   --swiglu
   --num-layers 36
   --num-attention-heads 32
   --group-query-attention
   --num-query-groups 8
)
"""

SCRIPT = """#!/bin/bash
pkill -9 sglang
set -ex
if command -v nvidia-smi >/dev/null 2>&1; then
    DETECTED_GPUS=$(nvidia-smi -L 2>/dev/null | wc -l | tr -d ' ')
else
    DETECTED_GPUS=0
fi
NUM_GPUS=${{NUM_GPUS:-${{DETECTED_GPUS}}}}
SCRIPT_DIR="$(cd -- "$(dirname -- "${{BASH_SOURCE[0]}}")" &>/dev/null && pwd)"
source "${{SCRIPT_DIR}}/models/qwen3-4B.sh"
PERF_ARGS=(
   --tensor-model-parallel-size 2
   --sequence-parallel
   --pipeline-model-parallel-size {pp}
   --context-parallel-size 1
)
RUNTIME_ENV_JSON="{{
  \\"env_vars\\": {{\\"CUDA_DEVICE_MAX_CONNECTIONS\\": \\"1\\"}}
}}"
ray job submit --address="http://127.0.0.1:8265" \\
   --runtime-env-json="${{RUNTIME_ENV_JSON}}" \\
   -- python3 {script} \\
   --actor-num-nodes 1 \\
   --actor-num-gpus-per-node {gpus} \\
   --colocate \\
   ${{MODEL_ARGS[@]}} \\
   ${{PERF_ARGS[@]}}
"""


def _write(tmp_path: Path, pp: int = 1, gpus: str = "8", script: str = "train.py") -> Path:
    (tmp_path / "scripts" / "models").mkdir(parents=True)
    (tmp_path / "scripts" / "models" / "qwen3-4B.sh").write_text(MODEL, encoding="utf-8")
    path = tmp_path / "scripts" / "run-qwen3-4B.sh"
    path.write_text(SCRIPT.format(pp=pp, gpus=gpus, script=script), encoding="utf-8")
    return path


def _launch(path: Path):
    return parse_launch(path.read_text(encoding="utf-8"), str(path))


def test_ray_runs_the_command_after_the_separator(tmp_path):
    config = _launch(_write(tmp_path))
    assert config.launcher == "ray train.py"
    assert config.flags["num_layers"].value == "36"  # from the sourced model file
    assert config.flags["tensor_model_parallel_size"].value == "2"


def test_slime_places_nodes_times_gpus_per_node_ranks(tmp_path):
    config = _launch(_write(tmp_path, gpus="4"))
    assert (config.nproc_per_node, config.nnodes) == (4, 1)
    assert "--actor-num-gpus-per-node" in config.world_source["nproc_per_node"]


def test_megatron_lms_front_end_reads_the_flags(tmp_path):
    eff = derive(_launch(_write(tmp_path, pp=2)), {"megatron-core": "0.17.0"}, torch_version="2.10.0")
    assert eff.values["pipeline_model_parallel_size"].value == 2
    assert eff.values["tensor_model_parallel_size"].value == 2
    assert eff.values["batch_p2p_comm"].value is True


def test_another_script_under_ray_is_not_read_as_megatron_lm(tmp_path):
    eff = derive(_launch(_write(tmp_path, pp=2, script="my_trainer.py")), {"megatron-core": "0.17.0"},
                 torch_version="2.10.0")
    assert eff.values["pipeline_model_parallel_size"].value != 2


@pytest.mark.wheels
def test_tp2_pp1_is_clean_out_of_the_box(tmp_path):
    script = _write(tmp_path, gpus="${NUM_GPUS}")
    # train.py where slime's run scripts expect it (the checkout's root, the launch directory);
    # without it the flags only slime's parser defines leave the run undecided
    # (launch.front-end-unread). Its flags as slime/utils/arguments.py:39-41 adds them.
    (tmp_path / "train.py").write_text(
        "import argparse\n\n\ndef add_cluster_arguments(parser):\n"
        "    parser.add_argument('--actor-num-nodes', type=int, default=1)\n"
        "    parser.add_argument('--actor-num-gpus-per-node', type=int, default=8)\n"
        "    parser.add_argument('--colocate', action='store_true', default=False)\n"
        "    return parser\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    doc = json.loads(proc.stdout)
    assert doc["launch"]["launcher"] == "ray train.py"
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 1
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]


@pytest.mark.wheels
def test_without_train_py_slimes_own_flags_leave_it_undecided(tmp_path):
    """Fail closed: where train.py is not found, `--colocate` and the actor flags are in no parser
    read here; argparse would exit on a misspelt one, so the run is not CLEAN."""
    script = _write(tmp_path, gpus="${NUM_GPUS}")
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(script), "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    doc = json.loads(proc.stdout)
    assert doc["verdict"]["status"] == "inconclusive"
    assert "--colocate" in doc["verdict"]["headline"] and "--command" in doc["verdict"]["headline"]


def test_the_stack_is_what_slime_runs_on():
    """slime is a git checkout, no PyPI release: no release of it is looked up, its run's stack
    is Megatron-LM's front end on megatron-core."""
    from auditor.rulebook.frameworks import Stack
    assert Stack.of("ray train.py").distributions == ["megatron-core"]


def test_a_module_launcher_under_ray_is_still_its_own(tmp_path):
    """volcengine/verl examples/ppo_trainer/run_qwen1.5_moe_a2.7b-gsm8k_megatron.sh (commit
    b178a3cd56) shows `RAY_ADDRESS='auto' ray job submit --working-dir . -- python3 -m
    verl.trainer.main_ppo ...` (commented there): verl's launcher, not a ray-started script."""
    path = tmp_path / "run.sh"
    path.write_text("RAY_ADDRESS='auto' ray job submit --working-dir . -- python3 -m verl.trainer.main_ppo "
                    "--config-name='ppo_megatron_trainer' "
                    "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2\n", encoding="utf-8")
    assert _launch(path).launcher == "python -m verl.trainer.main_ppo"
