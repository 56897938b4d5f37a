"""`bash -c TEXT NAME ARG...` gives the text its own positional parameters: NAME is $0, the
words after it $1, $2, ... (bash(1) INVOCATION), never the calling script's.

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit 067f987df03b8355b03192d88d70f1709fedf51a)
examples/models/exaone/exaone_moe/slurm_inference.sh:108-122: `srun "${SRUN_ARGS[@]}" bash -c '
cd "$1"; uv run --no-sync python scripts/inference/text_generation.py ... --tp "$5" --pp "$6" ...'
bash "$WORKDIR" "$HF_MODEL_ID" "$PROMPT" "$MAX_NEW_TOKENS" "$TP" "$PP" "$EP" "$ETP"`, with
PP="${PP:-1}" (:58). Reading `$6` as the launch script's own sixth argument left the pipeline size
unknown. A double-quoted text whose unknown part is the caller's `$*` (NeMo 8cfedd7203
nemo/collections/diffusion/vae/train_vae.sh: `bash -c "cd ${DIR} ; python -u ... --yes $*"`)
still names the caller's words.
"""

from __future__ import annotations

from auditor.config.launch import parse_launch

PP = "pipeline_model_parallel_size"

SLURM = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
set -euo pipefail
WORKDIR="${WORKDIR:-/opt/run}"
TP="${TP:-1}"
PP="${PP:-4}"
srun --mpi=pmix \\
    bash -c '
        cd "$1"
        torchrun --nproc_per_node 8 pretrain_gpt.py \\
            --tensor-model-parallel-size "$2" \\
            --pipeline-model-parallel-size "$3"
    ' bash "$WORKDIR" "$TP" "$PP"
"""


def test_bash_c_words_after_its_name_are_its_positional_parameters() -> None:
    config = parse_launch(SLURM, "slurm_inference.sh", environ={})
    assert config.flags[PP].value == "4"
    assert config.flags["tensor_model_parallel_size"].value == "1"
    assert config.workdir == "/opt/run"


def test_bash_c_without_words_has_no_positional_parameters() -> None:
    """Without words after the text, $1 is empty in the inner shell, whatever the script was given:
    `--pipeline-model-parallel-size ""` (bash: `bash -c 'echo "[$1]"'` prints `[]`)."""
    text = SLURM.replace(""" bash "$WORKDIR" "$TP" "$PP\"""", "")
    flag = parse_launch(text, "slurm_inference.sh", environ={}).flags[PP]
    assert flag.value == ""


def test_the_caller_s_own_arguments_in_a_double_quoted_text_stay_unknown() -> None:
    """The calling shell expands `$1` in a double-quoted text before bash -c runs it; not known
    here, it stays the caller's word, not the inner shell's empty $1 (which would leave the flag
    without a value: a false DOES NOT START). Passes on main too: it guards the reading above."""
    text = ('#!/bin/bash\nsrun bash -c "cd /opt/run ; torchrun --nproc_per_node 8 pretrain_gpt.py '
            '--pipeline-model-parallel-size $1"\n')
    config = parse_launch(text, "train_vae.sh", environ={})
    assert str(config.flags[PP].value) == "$1"
    assert not any(d.kind == "launch.flag-needs-value" for d in config.diagnostics)
