"""`read -r -d '' NAME <<'EOF' ... EOF` puts a whole quoted here-document in NAME (bash reads up to
a NUL, which never comes; `read` then strips the IFS whitespace at both ends). Written after
NVIDIA-NeMo/Megatron-Bridge examples/models/stepfun/step35/slurm_pretrain.sh (commit
067f987df03b8355b03192d88d70f1709fedf51a, lines 165-194): the per-rank script is read into
INNER_SCRIPT that way and run by `srun ... bash -c "...; ${INNER_SCRIPT}"`."""

from __future__ import annotations

from auditor.config.launch import parse_launch

SCRIPT = """CLI_OVERRIDES="model.pipeline_model_parallel_size=8 model.tensor_model_parallel_size=1"
read -r -d '' INNER_SCRIPT <<'EOF' || true
set -euo pipefail
export RANK=${SLURM_PROCID}
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --pipeline-model-parallel-size 4 --tensor-model-parallel-size 2
EOF

bash -c "export CLI_OVERRIDES=\\"${CLI_OVERRIDES}\\"; ${INNER_SCRIPT}"
"""


def test_a_quoted_heredoc_read_into_a_variable_is_its_text() -> None:
    launch = parse_launch(SCRIPT, "slurm_pretrain.sh")
    assert launch.script is not None and launch.script.endswith("pretrain_gpt.py")
    assert launch.flags["pipeline_model_parallel_size"].value == "4"
