"""A training command assembled in an array by a loop over values not known statically, and run
as `"${srun_cmd[@]}"`: the walk reads the array after one pass of the loop (what each pass
appends is what the script runs where the loop runs at all), keeps the words every branch of an
undecided test begins with, reads `$(cat <<'EOF' ... EOF)` as the document's text, and takes an
unknown word among srun's options before `python SCRIPT` for options, not the program.

Written after NVIDIA-NeMo/Megatron-Bridge examples/megatron_mimo/qwen35_vl/slurm_sft.sh (commit
067f987df03b8355b03192d88d70f1709fedf51a): `RUN_CMD=$(cat <<'EOF' ... "${cmd[@]}" EOF)` (:205-237),
`srun_base+=(--container-mounts=...)` under `if [ -n "$CONTAINER_MOUNTS" ]` (:253-257), then
`for node_index in "${!PACKED_NODES[@]}"` (a `mapfile` of `scontrol show hostnames`) appending
`":"` after the first node and `--nodes=1 ... bash -lc "${RUN_CMD}"` per node (:259-280), run as
`"${srun_cmd[@]}"` (:296); its entry takes the pipeline size inside
`--component "language=tp=4,pp=2,..."` (:232).
"""

from __future__ import annotations

import pytest

from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

SCRIPT = """#!/bin/bash
set -euo pipefail
CONTAINER_MOUNTS="${CONTAINER_MOUNTS:-}"
MIMO_WORLD_SIZE=17
GPUS_PER_NODE=8
RUN_CMD=$(cat <<'EOF'
set -euo pipefail
cmd=(
    uv run --no-sync python
    finetune.py
    --micro-batch-size 2
    --component "language=tp=4,pp=2,dp=2,rank_offset=0"
)
"${cmd[@]}"
EOF
)
mapfile -t PACKED_NODES < <(scontrol show hostnames "${SLURM_JOB_NODELIST}")
srun_base=(
    srun -l
    --export=ALL
)
if [ -n "$CONTAINER_MOUNTS" ]; then
    for mount in $CONTAINER_MOUNTS; do
        srun_base+=(--container-mounts="${mount}")
    done
fi
srun_cmd=("${srun_base[@]}")
remaining_tasks="${MIMO_WORLD_SIZE}"
for node_index in "${!PACKED_NODES[@]}"; do
    tasks_on_node="${GPUS_PER_NODE}"
    if (( node_index > 0 )); then
        srun_cmd+=(":")
    fi
    srun_cmd+=(
        --nodes=1
        --ntasks="${tasks_on_node}"
        --nodelist="${PACKED_NODES[$node_index]}"
        bash -lc "${RUN_CMD}"
    )
    remaining_tasks=$((remaining_tasks - tasks_on_node))
done
"${srun_cmd[@]}"
"""


def test_the_command_a_loop_appends_to_an_array_is_followed():
    config = parse_launch(SCRIPT, "slurm_sft.sh", environ={})
    assert config.launcher == "srun finetune.py" and config.script == "finetune.py"
    assert config.flags["micro_batch_size"].value == "2"
    assert [str(w) for w in config.wrapper[:3]] == ["srun", "-l", "--export=ALL"]
    said = [d for d in config.diagnostics if d.kind == "launch.loop-once"]
    # the mounts' loop (line 23) runs where the caller gives CONTAINER_MOUNTS, undecided here
    assert [d.where for d in said] == ["slurm_sft.sh:23", "slurm_sft.sh:29"] and "`srun_cmd`" in said[1].message


def test_an_array_a_test_may_extend_keeps_the_words_it_surely_has():
    text = ('ARGS=(--pipeline-model-parallel-size 4)\n'
            'if [ -n "$EXTRA" ]; then ARGS+=(--overlap-p2p-comm); fi\n'
            'torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}"\n')
    config = parse_launch(text, "run.sh", environ={})
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    # on one branch only: given or not, its value not known (config.flags `_branch_flags`)
    assert not isinstance(config.flags["overlap_p2p_comm"].value, (str, bool))


@pytest.mark.parametrize(("document", "size"), [
    ("<<'EOF'\ncmd=(torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 2)\n"
     "\"${cmd[@]}\"\nEOF\n", "2"),
    ("<<EOF\ntorchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 2\n\nEOF\n", "2"),
    # a document bash expands: expanded as bash does, a variable never set stays unknown
    ("<<EOF\ntorchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size $PP\nEOF\n", "2"),
    ("<<EOF\ntorchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size $NOPE\nEOF\n", None),
])
def test_cat_of_a_here_document_is_its_text(document, size):
    text = f"PP=2\nRUN_CMD=$(cat {document})\nsrun bash -lc \"${{RUN_CMD}}\"\n"
    flag = parse_launch(text, "run.sh", environ={}).flags["pipeline_model_parallel_size"]
    assert flag.value == size if size else not isinstance(flag.value, str)
    if size:
        assert flag.line == 3  # the document's first line


def test_a_size_inside_an_entry_s_own_list_of_settings_is_not_the_default():
    config = parse_launch(SCRIPT, "slurm_sft.sh", environ={})
    effective = derive(config, {"megatron-core": "0.17.0"}, {}, "2.10.0")
    assert effective.value("pipeline_model_parallel_size") is UNKNOWN
