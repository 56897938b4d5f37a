"""An array that an undecided test only extends with options keeps the words it surely begins
with, then a rest of options (bash.values `OptionWords`): a runner's options stay options, so the
program after them is still found; anything else a branch adds leaves a rest that may be any word.

Written after NVIDIA-NeMo/Megatron-Bridge 067f987df0
examples/models/nemotron/nemotron_3/ultra/slurm_inference.sh:96-101 (`SRUN_CMD=(srun --mpi=pmix
...)`, `if [ -n "$CONTAINER_MOUNTS" ]; then SRUN_CMD+=(--container-mounts="${CONTAINER_MOUNTS}");
fi`, `"${SRUN_CMD[@]}" bash -c '...'`) and examples/megatron_mimo/qwen35_vl/slurm_sft.sh:253-263
(`srun_cmd=("${srun_base[@]}")` copied from such an array, then extended in a loop). Before, two
such rests in a row made the first srun's program (`srun ${SRUN[@]}`).
"""

from __future__ import annotations

from auditor.config.launch import parse_launch

MODEL = ("--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --micro-batch-size 1 "
         "--global-batch-size 8 --seq-length 1024 --max-position-embeddings 1024")


def _srun(extend: str, copy_extend: str = 'if [ -n "${IMAGE:-}" ]; then CMD+=(--container-image="$IMAGE"); fi') -> str:
    return ("#!/bin/bash\nSRUN=(srun --ntasks-per-node 8 -N 2)\n"
            f"{extend}\n"
            'CMD=("${SRUN[@]}")\n'
            f"{copy_extend}\n"
            f'"${{CMD[@]}}" python pretrain_gpt.py {MODEL} --pipeline-model-parallel-size 2\n')


def test_options_a_test_may_add_to_a_runner_s_array_leave_its_program_found() -> None:
    for extend in ('if [ -n "$MOUNTS" ]; then SRUN+=(--container-mounts="${MOUNTS}"); fi',
                   'if [ -n "${MOUNTS:-}" ]; then SRUN+=(--container-mounts "$MOUNTS" --no-container-mount-home); fi',
                   'for m in ${MOUNTS:-}; do SRUN+=(--container-mounts="$m"); done'):
        config = parse_launch(_srun(extend), "job.sh", environ={})
        assert (config.launcher, config.script) == ("srun pretrain_gpt.py", "pretrain_gpt.py"), extend
        assert config.flags["pipeline_model_parallel_size"].value == "2"
        assert config.launcher_flags["ntasks_per_node"].value == "8"


def test_a_working_directory_option_a_branch_may_add_leaves_the_directory_unknown() -> None:
    run = f'"${{SRUN[@]}}" python pretrain_gpt.py {MODEL}\n'
    text = '#!/bin/bash\nSRUN=(srun)\nif [ -n "${DIR:-}" ]; then SRUN+=(--chdir "$DIR"); fi\n' + run
    assert parse_launch(text, "job.sh", environ={}).workdir is None
    text = '#!/bin/bash\nSRUN=(srun)\nif [ -n "${X:-}" ]; then SRUN+=(--exclusive); fi\n' + run
    assert parse_launch(text, "job.sh", environ={}).workdir is not None


def test_the_count_of_an_array_past_an_unknown_rest_is_unknown() -> None:
    text = ('#!/bin/bash\nA=(--seed 1)\nif [ -n "${X:-}" ]; then A+=(--bf16); fi\n'
            f'torchrun --nproc-per-node 8 pretrain_gpt.py {MODEL} --pipeline-model-parallel-size ${{#A[@]}}\n')
    flag = parse_launch(text, "train.sh", environ={}).flags["pipeline_model_parallel_size"]
    assert not isinstance(flag.value, str)


def test_a_loop_that_appends_options_only_leaves_the_counts_to_the_options() -> None:
    """NVIDIA-NeMo/Megatron-Bridge 067f987df0 examples/models/stepfun/step35/slurm_pretrain.sh:180-190:
    `SRUN_CMD="${SRUN_CMD} --container-mounts=${mount}"` per caller's mount, under `if [ -n
    "${CONTAINER_MOUNTS}" ]`, then `${SRUN_CMD} --nodes=... --ntasks-per-node=...`: each pass adds
    an option, no srun `:` group, so the sizes written after it stand (before: unknown)."""
    text = ('#!/bin/bash\nSRUN_CMD="srun --mpi=pmix"\nif [ -n "${CONTAINER_MOUNTS}" ]; then\n'
            '    for mount in ${CONTAINER_MOUNTS}; do\n        SRUN_CMD="${SRUN_CMD} --container-mounts=${mount}"\n'
            f'    done\nfi\n${{SRUN_CMD}} --nodes=2 --ntasks-per-node=8 python pretrain_gpt.py {MODEL}\n')
    config = parse_launch(text, "job.sh", environ={})
    assert (config.nproc_per_node, config.nnodes) == (8, 2)
