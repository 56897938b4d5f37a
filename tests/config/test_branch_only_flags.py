"""A flag only a branch the reading cannot decide gives (review r39-inner items 2-3): it may be
given or not (`Flag.maybe`), so a reader that asks whether it is given cannot tell.

- `DS_ARGS=""; if [ "$USE_DEEPSPEED" = 1 ]; then DS_ARGS="--deepspeed ..."; fi; torchrun
  pretrain_gpt.py ... $DS_ARGS`: whether the run is Megatron-DeepSpeed's (DeepSpeed's pipeline
  engine) or Megatron-LM's is undecided, never taken as given (that read CLEAN where the run
  without the flag hangs under TORCH_DISTRIBUTED_DEBUG=DETAIL). The shape of
  microsoft/Megatron-DeepSpeed f4157bea69 examples_deepspeed/pretrain_llama2_distributed.sh
  (`ds_args=" --deepspeed ${ds_args}"`, and `--no-pipeline-parallel` added under an if);
- `--yaml-cfg FILE` on such a branch replaces the command line's flags only where it is given:
  each setting the command line and FILE disagree on is not known, and a FILE missing there
  stops nothing surely.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

HEAD = "#!/bin/bash\n# megatron-core==0.17.0\n# torch==2.10.0\n"
RUN = ("torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 24 --hidden-size 1024 "
       "--num-attention-heads 16 --micro-batch-size 1 --global-batch-size 8 --seq-length 1024 "
       "--max-position-embeddings 1024 --pipeline-model-parallel-size 4 --tensor-model-parallel-size 2")
DS = "--deepspeed --deepspeed_config ds_config.json --zero-stage 1"


@pytest.mark.parametrize("branch", [
    f'DS_ARGS=""\nif [ "$USE_DEEPSPEED" = 1 ]; then DS_ARGS="{DS}"; fi\n{RUN} $DS_ARGS\n',
    f'DS_ARGS=()\nif [ "$USE_DEEPSPEED" = 1 ]; then DS_ARGS=({DS}); fi\n{RUN} "${{DS_ARGS[@]}}"\n',
])
def test_a_front_end_a_branch_may_choose_is_undecided(branch: str) -> None:
    config = parse_launch(HEAD + branch, "train.sh", environ={})
    said = [d for d in config.diagnostics if d.kind == "launch.unknown-stack"]
    assert config.launcher.startswith("torchrun")
    assert len(said) == 1 and "`--deepspeed`" in said[0].message and said[0].detail["flags"] == ["--deepspeed"]
    assert config.flags["deepspeed"].maybe


def test_a_front_end_every_branch_chooses_is_that_front_ends() -> None:
    branch = f'if [ "$X" = 1 ]; then DS_ARGS="{DS}"; else DS_ARGS="--deepspeed"; fi\n{RUN} $DS_ARGS\n'
    config = parse_launch(HEAD + branch, "train.sh", environ={})
    assert config.launcher.startswith("megatron-deepspeed") and not config.flags["deepspeed"].maybe
    assert not any(d.kind == "launch.unknown-stack" for d in config.diagnostics)


def _pp(tmp_path: Path, pp: int, given: str = "gpt.yaml", glue: str = " ") -> object:
    (tmp_path / "gpt.yaml").write_text(f"model_parallel:\n  pipeline_model_parallel_size: {pp}\n")
    script = tmp_path / "train.sh"
    script.write_text(HEAD + f'CFG_ARGS=""\nif [ "$USE_YAML" = 1 ]; then CFG_ARGS="--yaml-cfg{glue}{given}"; fi\n'
                      f"{RUN} $CFG_ARGS\n")
    config = parse_launch(script.read_text(), str(script), environ={})
    assert not any(d.kind == "launch.yaml-cfg" for d in config.diagnostics)
    return derive(config, {"megatron-core": "0.17.0"}, None, "2.10.0").value("pipeline_model_parallel_size")


@pytest.mark.parametrize("glue", [" ", "="])  # `--yaml-cfg=FILE` was not read (review r39-inner, minor)
def test_a_yaml_cfg_a_branch_may_give_keeps_what_both_agree_on(tmp_path: Path, glue: str) -> None:
    assert _pp(tmp_path, 4, glue=glue) == 4
    assert _pp(tmp_path, 1, glue=glue) is UNKNOWN
    assert _pp(tmp_path, 4, "missing.yaml", glue) is UNKNOWN


SRUN_RUN = ('"${SRUN[@]}" python pretrain_gpt.py --num-layers 24 --hidden-size 1024 --num-attention-heads 16 '
            "--micro-batch-size 1 --global-batch-size 8 --seq-length 1024 --max-position-embeddings 1024 "
            "--pipeline-model-parallel-size 4\n")


@pytest.mark.parametrize("export", ["--export=ALL,TORCH_DISTRIBUTED_DEBUG=DETAIL", "--export=TORCH_DISTRIBUTED_DEBUG=DETAIL"])
def test_an_environment_option_a_branch_may_give_leaves_what_it_sets_unknown(export: str) -> None:
    """review r39 item 5: `srun --export=...` only a branch adds (`SRUN+=(...)` under an if)."""
    body = (f'SRUN=(srun --nodes=2 --ntasks-per-node=8)\nif [ "$DEBUG" = 1 ]; then SRUN+=({export}); fi\n'
            + SRUN_RUN)
    config = parse_launch(HEAD + body, "train.sh", environ={})
    assert isinstance(config.env["TORCH_DISTRIBUTED_DEBUG"].value, Symbolic)
