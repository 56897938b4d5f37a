"""A command array a loop of unknown passes builds is read after one pass: what one pass
appends is the command, but how many `:`-separated heterogeneous groups (each `--nodes=1
--ntasks=8`) run is not known, so neither are the node and task counts.

Written after NVIDIA-NeMo/Megatron-Bridge examples/megatron_mimo/qwen35_vl/slurm_sft.sh (commit
067f987df03b8355b03192d88d70f1709fedf51a, :253-296): srun_base, then one `--nodes=1 --ntasks=N
... bash -lc "$RUN_CMD"` component per node appended in a loop over `scontrol show hostnames`,
`:` between, run as `"${srun_cmd[@]}"`; here the command is Megatron-LM's pretrain_gpt.py.
"""

from __future__ import annotations

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch

SCRIPT = """#!/bin/bash
RUN_CMD=$(cat <<'EOF'
python pretrain_gpt.py --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2
EOF
)
mapfile -t PACKED_NODES < <(scontrol show hostnames "${SLURM_JOB_NODELIST}")
srun_cmd=(srun -l --export=ALL)
for node_index in "${!PACKED_NODES[@]}"; do
    if (( node_index > 0 )); then
        srun_cmd+=(":")
    fi
    srun_cmd+=(--nodes=1 --ntasks-per-node=8 --nodelist="${PACKED_NODES[$node_index]}" bash -lc "${RUN_CMD}")
done
"${srun_cmd[@]}"
"""


def test_a_loop_read_after_one_pass_leaves_the_sizes_unknown():
    config = parse_launch(SCRIPT, "slurm_sft.sh", environ={"SLURM_NTASKS_PER_NODE": "8"})
    assert config.flags["pipeline_model_parallel_size"].value == "2"
    assert config.world_size is None
    assert isinstance(config.nnodes, Symbolic) and isinstance(config.nproc_per_node, Symbolic)
    assert "line 8" in config.world_source["nnodes"]


def test_a_command_no_loop_builds_keeps_its_sizes():
    text = SCRIPT.replace('"${srun_cmd[@]}"', 'srun --nodes=2 --ntasks-per-node=8 bash -lc "${RUN_CMD}"')
    config = parse_launch(text, "slurm_sft.sh", environ={})
    assert config.world_size == 16


OTHER = """#!/bin/bash
mapfile -t NODES < <(scontrol show hostnames "${SLURM_JOB_NODELIST}")
check=(srun --ntasks-per-node=1)
for node in "${NODES[@]}"; do
    check+=(--nodelist="${node}")
done
"${check[@]}" nvidia-smi
srun --nodes=2 --ntasks-per-node=8 python pretrain_gpt.py --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2
"""


def test_a_loop_built_array_run_by_another_command_leaves_the_sizes_known():
    config = parse_launch(OTHER, "slurm_sft.sh", environ={})
    assert config.nproc_per_node == 8 and config.nnodes == 2 and config.world_size == 16
