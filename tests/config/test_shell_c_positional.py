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


TRAIN = ("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 1 --num-layers 8 "
         "--pipeline-model-parallel-size")


def _pp(script: str) -> object:
    return parse_launch("#!/bin/bash\n" + script + "\n", "slurm_inference.sh", environ={}).flags[PP].value


def test_shift_inside_the_text_moves_its_positional_parameters() -> None:
    """The exaone form with the text's own `shift` (review r48-infer d01, d07): bash reads
    `$1` after `shift` as the second word, after `shift 2` the third (real bash prints 4 for
    both). Reading the first (3: 8 GPUs not divisible) gave a false DOES NOT START."""
    assert _pp(f"""srun bash -c 'shift; {TRAIN} "$1"' _ 3 4""") == "4"
    assert _pp(f"""bash -c 'shift 2; {TRAIN} "$1"' _ 3 3 4""") == "4"


def test_set_dash_dash_inside_the_text_rebinds_them() -> None:
    """`set -- 3` inside the text makes $1 3 (real bash prints 3; review r48-infer d02: PP 4 was
    stated); `set -euo pipefail` (options only, `pipefail` the `o`'s name) keeps them."""
    assert _pp(f"""bash -c 'set -- 3; {TRAIN} "$1"' _ 4""") == "3"
    assert _pp(f"""bash -c 'set -euo pipefail; {TRAIN} "$1"' _ 4""") == "4"


def test_a_shift_that_may_not_run_leaves_them_unknown() -> None:
    """A `shift` in a branch or an argument loop: which word is $1 after it is not known
    statically; unknown, never a guess (review r48-infer d06: bash gives 4 here)."""
    loop = ("""bash -c 'PP=1; while [ $# -gt 0 ]; do case "$1" in --pp) PP="$2"; shift;; esac; shift; done; """
            f"""{TRAIN} $PP' _ --pp 4""")
    assert not isinstance(_pp(loop), str)
    assert not isinstance(_pp(f"""bash -c 'if [ -n "$X" ]; then shift; fi; {TRAIN} "$1"' _ 3 4"""), str)


def test_a_function_s_positional_parameters_are_its_call_s_words() -> None:
    """bash(1) FUNCTIONS: while a function runs, $1 ... are its arguments (review r48-infer d03:
    the text's 3 was read, a false DOES NOT START; real bash prints 4); `f "$@"` forwards the
    text's own; at the top level the same (real bash prints 3)."""
    assert _pp(f"""bash -c 'f() {{ {TRAIN} "$1"; }}; f 4' _ 3""") == "4"
    assert _pp(f"""bash -c 'f() {{ {TRAIN} "$2"; }}; f "$@"' _ 3 4""") == "4"
    assert _pp(f"""f() {{ {TRAIN} "$1"; }}; f 3""") == "3"


def test_a_function_given_the_caller_s_unknown_words_has_unknown_ones() -> None:
    """`main "$@"` with the script's own arguments unknown: how many there are is not known, so
    `$2` inside is unknown, never empty (real bash prints the caller's second word). Passes
    before too: it guards the binding above."""
    assert not isinstance(_pp(f"""main() {{ {TRAIN} "$2"; }}; main "$@\""""), str)


def test_a_text_read_again_keeps_the_caller_s_pieces_unknown() -> None:
    """`bash -c "bash -c '... $1' a 3"`: the outer double quotes expand the calling script's `$1`
    before either inner shell runs (real bash prints the caller's first word, not 3; review
    r48-infer d04, c14). Reading the written `$1` again bound it to the inner `a 3`: a false
    DOES NOT START."""
    assert not isinstance(_pp(f"""bash -c "bash -c '{TRAIN} $1' a 3\""""), str)
    assert not isinstance(_pp(f"""bash -c "bash -c '{TRAIN} $1' a 4" c 2"""), str)
    assert not isinstance(_pp(f"""bash -c "f() {{ {TRAIN} $1; }}; f 3\""""), str)
