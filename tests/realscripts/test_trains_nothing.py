"""One rank running an entry that trains nothing is NOT A PIPELINE RUN
(config/trains_nothing.py).

Reproduced (the trees are written here, shaped as upstream's):
NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a
examples/models/nemotron/nemotron_3/ultra/pack_data_job.sh: `#SBATCH --nodes=1`,
`#SBATCH --ntasks-per-node=1` (:17-18), then `"${SRUN_CMD[@]}" bash -c '... uv run --no-sync
python scripts/training/prepare_gpt_sft_packed_data.py --recipe "$RECIPE_NAME"'` (:43-56);
scripts/training/prepare_gpt_sft_packed_data.py (:40-140) looks its recipe up by name with
getattr, builds the tokenizer and packs the dataset with megatron.bridge's builders.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from textwrap import dedent

import pytest

from auditor.config import one_process
from auditor.config.launch import read_launch
from auditor.config.one_process import own_processes
from auditor.rulebook.launchers import Spelling

JOB = dedent('''\
    #!/bin/bash
    #SBATCH --nodes=1
    #SBATCH --ntasks-per-node={tasks}
    #SBATCH --partition=cpu
    set -euo pipefail
    RECIPE_NAME=${{RECIPE_NAME:-nemotron_sft_packed_config}}
    SRUN_CMD=(srun --mpi=pmix --no-container-mount-home)
    "${{SRUN_CMD[@]}}" bash -c '
    set -euo pipefail
    uv run --no-sync python scripts/training/prepare_data.py \\
        --recipe "$RECIPE_NAME"
    '
    ''')

PREPARE = dedent('''\
    import argparse
    import sys
    {extra_import}

    def main() -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("--recipe", required=True)
        args = parser.parse_args()
        import megatron.bridge.recipes as all_recipes
        from megatron.bridge.data.builders import GPTSFTDatasetBuilder
        from megatron.bridge.training.tokenizers.tokenizer import build_tokenizer
        recipe_fn = getattr(all_recipes, args.recipe, None)
        if recipe_fn is None:
            sys.exit("no such recipe")
        cfg = recipe_fn()
        tokenizer = build_tokenizer(cfg.tokenizer)
        builder = GPTSFTDatasetBuilder(config=cfg.dataset, tokenizer=tokenizer)
        builder.prepare_data()
        {extra_call}

    if __name__ == "__main__":
        main()
    ''')


def _notes(tmp_path: Path, tasks: int = 1, extra_import: str = "", extra_call: str = "") -> list[str]:
    (tmp_path / "scripts" / "training").mkdir(parents=True, exist_ok=True)
    (tmp_path / "scripts" / "training" / "prepare_data.py").write_text(
        PREPARE.format(extra_import=extra_import, extra_call=extra_call))
    (tmp_path / "pack_data_job.sh").write_text(JOB.format(tasks=tasks))
    config = read_launch(tmp_path / "pack_data_job.sh")
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


def test_one_task_data_preparation_is_not_a_pipeline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    notes = _notes(tmp_path)
    assert len(notes) == 1
    assert "prepare_data.py is a job that trains nothing (data preparation" in notes[0]
    assert "on one rank" in notes[0]
    assert "#SBATCH" in notes[0] and "no peer" in notes[0]


def test_one_task_training_entry_stays_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One rank of a pipeline trainer runs its no-pipelining schedule: a one-stage run, judged as one."""
    monkeypatch.chdir(tmp_path)
    assert _notes(tmp_path, extra_import="from megatron.bridge.training.pretrain import pretrain",
                  extra_call="pretrain(cfg, forward_step_func=None)") == []


def test_several_tasks_are_not_one_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight tasks that evaluate may send between stages at PP > 1 (megatron's send_forward)."""
    monkeypatch.chdir(tmp_path)
    assert _notes(tmp_path, tasks=8,
                  extra_import="from megatron.core.pipeline_parallel.p2p_communication import send_forward",
                  extra_call="send_forward(tokenizer)") == []


def test_one_task_that_spawns_ranks_is_not_one_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _notes(tmp_path, extra_import="import torch.multiprocessing as mp",
                  extra_call="mp.spawn(main, nprocs=8)") == []



def test_one_task_importing_a_module_the_checkout_lacks_is_undecided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local package's module the checkout lacks (Pai-Megatron-Patch a098ca5acb
    examples/llama/evaluate_huggingface_llama.py:31 imports megatron_patch.data.evaluate_dataset,
    absent there): the run stops at it, or runs a copy not read."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scripts" / "prep_utils").mkdir(parents=True)
    (tmp_path / "scripts" / "prep_utils" / "__init__.py").write_text("")
    assert _notes(tmp_path, extra_import="from prep_utils.packing import pack", extra_call="pack(builder)") == []


def test_one_task_naming_a_training_loop_is_not_read_as_training_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry that names a training loop, even unused, may train (config/entry_schedule.py)."""
    monkeypatch.chdir(tmp_path)
    assert _notes(tmp_path, extra_import="from megatron.core.pipeline_parallel import get_forward_backward_func") == []


def test_one_task_given_a_pipeline_size_is_left_to_the_start_up_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--pipeline-model-parallel-size 2` on one rank does not start: not called a data job."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scripts" / "training").mkdir(parents=True)
    (tmp_path / "scripts" / "training" / "prepare_data.py").write_text(PREPARE.format(extra_import="", extra_call=""))
    (tmp_path / "job.sh").write_text(JOB.format(tasks=1).replace('--recipe "$RECIPE_NAME"', '--recipe "$RECIPE_NAME" --pipeline-model-parallel-size 2'))
    config = read_launch(tmp_path / "job.sh")
    assert not [d for d in config.diagnostics if d.kind == "launch.not-pipeline"]


# The holes review r40-notpipe found: a world the environment names, torchrun's default world, a
# pipeline size the command or the code gives, and the one reader of a module the checkout lacks.

def _job_notes(tmp_path: Path, job: str, entry: str = "") -> list[str]:
    """The notes on `job` (job.sh) running scripts/training/prepare_data.py (`entry`, else PREPARE)."""
    (tmp_path / "scripts" / "training").mkdir(parents=True, exist_ok=True)
    (tmp_path / "scripts" / "training" / "prepare_data.py").write_text(
        entry or PREPARE.format(extra_import="", extra_call=""))
    (tmp_path / "job.sh").write_text(job)
    config = read_launch(tmp_path / "job.sh")
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


# the relay the review wrote: megatron-core's inference P2P, which reaches_no_loop does not see,
# between two ranks of a world the environment names (`srun --ntasks-per-node=1` on each node)
RELAY = dedent('''\
    import argparse
    import torch
    from megatron.core import parallel_state
    from megatron.core.inference.communication_utils import recv_from_prev_pipeline_rank_, send_to_next_pipeline_rank

    def main() -> None:
        parser = argparse.ArgumentParser()
        parser.add_argument("--ckpt", required=True)
        args = parser.parse_args()
        torch.distributed.init_process_group("nccl")
        parallel_state.initialize_model_parallel({sizes})
        pp_group = parallel_state.get_pipeline_model_parallel_group()
        buffer = torch.load(args.ckpt)
        if not parallel_state.is_pipeline_first_stage():
            recv_from_prev_pipeline_rank_(buffer)
        if not parallel_state.is_pipeline_last_stage():
            send_to_next_pipeline_rank(buffer)

    if __name__ == "__main__":
        main()
    ''')

ONE_TASK = dedent('''\
    #!/bin/bash
    #SBATCH --nodes=1
    #SBATCH --ntasks-per-node=1
    set -euo pipefail
    {export}
    srun --mpi=pmix python scripts/training/prepare_data.py {args}
    ''')


def test_one_task_joining_a_world_the_environment_names_is_not_one_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exported WORLD_SIZE/RANK/MASTER_ADDR: env:// joins processes started elsewhere, as
    config/one_process.py `world` reads it for a plain `python`."""
    monkeypatch.chdir(tmp_path)
    job = ONE_TASK.format(export="export MASTER_ADDR=node0 MASTER_PORT=29500 WORLD_SIZE=2 RANK=${RANK:-0}",
                          args="--recipe r")
    assert _job_notes(tmp_path, job) == []
    config = read_launch(tmp_path / "job.sh")
    assert "is set for" in own_processes(config) and "joins a world" in own_processes(config)


def test_one_task_setting_megatron_up_with_a_pipeline_size_is_no_data_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`initialize_model_parallel(1, 2)` on one rank: megatron-core refuses the world (it does not
    start), or, in a world joined elsewhere, pipelines; by position or by keyword."""
    monkeypatch.chdir(tmp_path)
    job = ONE_TASK.format(export="", args="--ckpt /data/hidden.pt")
    assert _job_notes(tmp_path, job, RELAY.format(sizes="1, 2")) == []
    assert _job_notes(tmp_path, job, RELAY.format(sizes="pipeline_model_parallel_size=args.pp")) == []
    # sizes of 1 written out split the world by 1: the relay, on one rank, has no peer
    assert len(_job_notes(tmp_path, job, RELAY.format(sizes="1, 1"))) == 1


TORCHRUN = "#!/bin/bash\ntorchrun {options} scripts/training/prepare_data.py --recipe r {args}\n"


def test_torchrun_default_world_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torchrun's default --nproc-per-node 1 is the caller's PET_NPROC_PER_NODE where it sets one:
    only a world the script writes is one rank; a `${GPUS:-1}` fallback is not one either."""
    monkeypatch.chdir(tmp_path)
    assert _job_notes(tmp_path, TORCHRUN.format(options="", args="")) == []
    assert _job_notes(tmp_path, TORCHRUN.format(options="--nproc_per_node=${GPUS:-1} --nnodes=1", args="")) == []
    written = _job_notes(tmp_path, TORCHRUN.format(options="--standalone --nproc_per_node=1 --nnodes=1", args=""))
    assert len(written) == 1 and "--nproc_per_node 1" in written[0]


@pytest.mark.parametrize("flag", ["--pp-size", "--pp_degree", "--ppsize", "--pipe-parallel-size", "--num-stages"])
def test_one_rank_given_any_pipeline_size_flag_gets_no_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str) -> None:
    """The entry's own parser is not read: any flag that may be a pipeline size may make the run
    one that does not start."""
    monkeypatch.chdir(tmp_path)
    job = TORCHRUN.format(options="--standalone --nproc_per_node=1 --nnodes=1", args=f"{flag} 2")
    assert _job_notes(tmp_path, job) == []


def test_local_module_importing_what_the_checkout_lacks_is_undecided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module of the checkout's own package that the checkout lacks, imported by a local module
    of the entry, not the entry itself (Pai-Megatron-Patch a098ca5acb: megatron_patch/ at the
    checkout's root, examples/llama/evaluate_huggingface_llama.py:31 imports
    megatron_patch.data.evaluate_dataset, absent there): config/entry_imports.py decides it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'prep'\n")
    (tmp_path / "prep_patch" / "data").mkdir(parents=True)
    (tmp_path / "prep_patch" / "__init__.py").write_text("")
    (tmp_path / "prep_patch" / "data" / "__init__.py").write_text("")
    (tmp_path / "scripts" / "training").mkdir(parents=True)
    (tmp_path / "scripts" / "training" / "helpers.py").write_text(
        "from prep_patch.data.packing import pack\n\n\ndef run(builder):\n    pack(builder)\n")
    assert _notes(tmp_path, extra_import="from helpers import run", extra_call="run(builder)") == []


def test_own_processes_without_the_one_process_rule_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No launcher rule with `one_process`: nothing is known, never StopIteration."""
    monkeypatch.chdir(tmp_path)
    _job_notes(tmp_path, ONE_TASK.format(export="", args="--recipe r"))
    config = read_launch(tmp_path / "job.sh")
    rules = Spelling.load(None)
    bare = dataclasses.replace(rules, launchers=tuple(e for e in rules.launchers if not e.get("one_process")))
    monkeypatch.setattr(one_process.Spelling, "load", staticmethod(lambda version: bare))
    assert "one_process" in own_processes(config)
