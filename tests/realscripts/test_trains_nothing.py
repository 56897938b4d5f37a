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

from pathlib import Path
from textwrap import dedent

import pytest

from auditor.config.launch import read_launch

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
    (tmp_path / "scripts" / "training").mkdir(parents=True)
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
