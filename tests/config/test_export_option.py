"""srun's `--export` grammar as config.export_option reads it, and config.launcher_env applying
it to the environment a command gets (Slurm srun(1) --export, SchedMD/slurm doc/man/man1/srun.1
at commit 3bf22c447a: "--export=<[ALL,]environment variables|ALL|NONE>")."""

from __future__ import annotations

from auditor.bash.values import EnvVar, Field, Partial, Symbolic
from auditor.config import launcher_env
from auditor.config.export_option import effect, parse
from auditor.config.model import LaunchConfig
from auditor.rulebook.launchers import Spelling

SPELLING = Spelling.load(None)
SRUN = next(e for e in SPELLING.launchers if e["name"] == "srun")
MPIRUN = next(e for e in SPELLING.launchers if e["name"] == "mpirun")


def test_all_names_and_values_are_told_apart():
    got = parse(SRUN, "ALL,NCCL_DEBUG=INFO,HOME", "srun's --export")
    assert got.keep_all and got.given == {"NCCL_DEBUG": "INFO"} and got.named == {"HOME"} and not got.opened


def test_an_unknown_value_is_unknown_only_for_its_name():
    value = Partial("ALL,TORCH_DISTRIBUTED_DEBUG=$LEVEL", (("ALL,TORCH_DISTRIBUTED_DEBUG=", False), ("$LEVEL", True)))
    got = parse(SRUN, value, "srun's --export")
    assert got.keep_all and not got.opened and isinstance(got.given["TORCH_DISTRIBUTED_DEBUG"], Symbolic)


def test_an_unknown_part_may_name_anything_and_drops_nothing_known():
    value = Partial("NONE,$MORE", (("NONE,", False), ("$MORE", True)))
    drops, sets, _ = effect(SRUN, value, "srun's --export", {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
                                 frozenset({"TORCH_DISTRIBUTED_DEBUG"}))
    assert not drops and isinstance(sets["TORCH_DISTRIBUTED_DEBUG"], Symbolic)


def test_mpirun_x_adds_without_dropping():
    drops, sets, _ = effect(MPIRUN, "NCCL_DEBUG=INFO", "mpirun's -x", {"PATH": "/bin"}, frozenset())
    assert not drops and sets == {"NCCL_DEBUG": "INFO"}


def test_none_keeps_only_the_allocation_variables():
    config = LaunchConfig(path="job.sh", launcher="", command_line=2, end_line=2)
    config.env = {"TORCH_DISTRIBUTED_DEBUG": EnvVar("TORCH_DISTRIBUTED_DEBUG", "DETAIL", 1, "export"),
                  "SLURM_NNODES": EnvVar("SLURM_NNODES", "2", 0, "environ")}
    args = [Field("--export=NONE", 2), Field("python", 2), Field("train.py", 2)]
    launcher_env.apply(config, SRUN, args, [], SPELLING)
    assert set(config.env) == {"SLURM_NNODES"}
