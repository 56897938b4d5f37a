"""Launchers that wrap the training command (issue 22 item 9, launch side): `ray job submit ... --
CMD`, `mpirun ... bash entry.sh pretrain.py <flags>` (the wrapper script beside the launch script is
read with its arguments), and coverage.py's `coverage run` standing for python.

Upstream shapes: verl examples/ppo_trainer/run_qwen1.5_moe_a2.7b-gsm8k_megatron.sh (volcengine/verl
commit b178a3cd56f58b2d502255daba591e92833930a7): `ray job submit --working-dir . -- python3 -m ...`;
Megatron-LM tests/unit_tests/run_ci_test.sh (NVIDIA/Megatron-LM commit
d98e8a64ddf34856e74b24714e3bedb2f5a39553): `python -m torch.distributed.run ${DISTRIBUTED_ARGS[@]} -m
coverage run --data-file=.coverage.unit_tests --source=megatron/core ...`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch, read_launch

FLAGS = "--pipeline-model-parallel-size 4 --tensor-model-parallel-size 2"


def test_ray_job_submit_runs_what_follows_the_separator() -> None:
    config = parse_launch("RAY_ADDRESS='auto' ray job submit --working-dir . -- "
                          f"torchrun --nproc_per_node 8 pretrain_gpt.py {FLAGS}\n", "ray.sh")
    assert config.launcher == "torchrun pretrain_gpt.py" and config.world_size == 8
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    assert [str(w) for w in config.wrapper][:3] == ["ray", "job", "submit"]


def test_mpirun_through_an_entry_script_beside_the_launch_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # launched from its own directory: bash opens entry.sh there
    (tmp_path / "entry.sh").write_text("#!/bin/bash\nexport NCCL_DEBUG=INFO\ncd /workspace\npython $*\n")
    # Pai-Megatron-Patch examples/llama3/mpi_run_pretrain_llama3.sh (commit a098ca5acb): `-mca pml ob1`, entry.sh `python $*`
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\nmpirun -np 16 --allow-run-as-root -mca pml ob1 bash entry.sh pretrain_gpt.py \"{FLAGS}\"\n")
    config = read_launch(tmp_path / "run.sh")
    assert config.launcher == "mpirun pretrain_gpt.py" and config.world_size == 16
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    assert config.env["NCCL_DEBUG"].value == "INFO"


def test_an_entry_script_that_is_not_there_is_named(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(f"mpirun -np 16 bash entry.sh pretrain_gpt.py {FLAGS}\n"
                                     "torchrun pretrain_gpt.py\n")
    config = read_launch(tmp_path / "run.sh")
    assert any(d.kind == "launch.unread-file" and "entry.sh" in d.message for d in config.diagnostics)


def test_mpirun_without_a_process_count_is_unknown() -> None:
    config = parse_launch(f"mpirun python pretrain_gpt.py {FLAGS}\n", "m.sh")
    assert isinstance(config.nproc_per_node, Symbolic) and config.world_size is None


def test_coverage_run_stands_for_python() -> None:
    inside = parse_launch("torchrun --nproc_per_node 2 -m coverage run --data-file=.cov --source=megatron/core "
                          f"pretrain_gpt.py {FLAGS}\n", "c.sh")
    assert inside.launcher == "torchrun pretrain_gpt.py"
    assert inside.flags["tensor_model_parallel_size"].value == "2"
    outside = parse_launch(f"coverage run -m torch.distributed.run --nproc_per_node 2 pretrain_gpt.py {FLAGS}\n", "c.sh")
    assert outside.launcher == "python -m torch.distributed.run pretrain_gpt.py" and outside.world_size == 2


def test_positional_parameters_of_a_script_read_with_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.sh").write_text('#!/bin/bash\nPP=$1\nshift_me="$2"\ntorchrun --nproc_per_node $# '
                                       'pretrain_gpt.py --pipeline-model-parallel-size "$PP" "${@:3}"\n')
    (tmp_path / "run.sh").write_text("bash train.sh 4 x\n")
    config = read_launch(tmp_path / "run.sh")
    assert config.flags["pipeline_model_parallel_size"].value == "4" and config.nproc_per_node == 2
