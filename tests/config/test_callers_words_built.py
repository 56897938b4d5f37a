"""Text the script builds from words it does not state: the caller's (`$X` never set, `${X:-}`),
a `read` of input not known, a loop over such words. Where that text splits into arguments it
may add any flag, so the settings written before it are unknown (config.flags `wholly_unknown`,
bash.walk `unknown_words`); before, each was read as the script's own text: PP 2, CLEAN.

The constructs are those of upstream launch scripts:
- an append under a test of the caller's variable: NVIDIA-NeMo/RL 7ea279abfb
  examples/nemo_gym/nemotron-3-super/super_launch.sh:182-189 (`if [[ -n "$MTP_EXTRA_ARGS" ]];
  then COMMAND="$COMMAND ${MTP_EXTRA_ARGS}"; fi`, the same for `"${EXTRA_HYDRA_ARGS:-}"`);
- `read -r -a` of a caller's empty default: NVIDIA-NeMo/Megatron-Bridge 067f987df0
  examples/models/deepseek_v4/conversion.sh:47 (`read -r -a UV_RUN_ARGS_ARRAY <<< "${UV_RUN_ARGS:-}"`),
  and of a default with text, :63-64 (`<<< "${CONVERSION_EXECUTOR_ARGS:---executor local ...}"`);
  NVIDIA-NeMo/RL 7ea279abfb examples/nemo_gym/nemotron-3-super-omni/super_omni_launch.sh:206
  (`IFS=',' read -ra mount_specs <<< "${MOUNTS}"`);
- a string built in a loop over the caller's words (`for a in $EXTRA; do ARGS="$ARGS --$a"; done`)
  and the `[ -n "$X" ] && ARGS+=...` form: review forms, none among the pinned scripts.
"""

from __future__ import annotations

import pytest

from auditor.config.derive import derive
from auditor.config.expr import UNKNOWN
from auditor.config.launch import parse_launch

HEAD = "#!/bin/bash\n# megatron-core==0.17.0\n# torch==2.10.0\n"
RUN = ("torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 24 --hidden-size 1024 "
       "--num-attention-heads 16 --micro-batch-size 1 --global-batch-size 8 --seq-length 1024 "
       "--max-position-embeddings 1024 --pipeline-model-parallel-size 2")


def _pp(body: str) -> object:
    config = parse_launch(HEAD + body, "train.sh")
    return derive(config, {"megatron-core": "0.17.0"}, None, "2.10.0").value("pipeline_model_parallel_size")


@pytest.mark.parametrize("append", [
    'if [ -n "${X:-}" ]; then ARGS="$ARGS $X"; fi\n',
    'if [[ -n "${X:-}" ]]; then ARGS="$ARGS ${X}"; fi\n',
    'if [ -n "$X" ]; then ARGS="$ARGS $X"; fi\n',
    '[ -n "$X" ] && ARGS+=" $X"\n',
    '[ -n "${X:-}" ] && ARGS+=" $X"\n',
    'if [ -n "$X" ]; then ARGS="$ARGS $(cat extra.txt)"; fi\n',
])
def test_a_string_a_test_appends_the_callers_words_to_may_set_any_flag(append: str) -> None:
    assert _pp(f'ARGS="--seed 1"\n{append}{RUN} $ARGS\n') is UNKNOWN


@pytest.mark.parametrize("append", ['[ -n "${X:-}" ] && ARGS+=($X)\n', 'if [ -n "$X" ]; then ARGS+=($X); fi\n'])
def test_an_array_a_test_appends_the_callers_words_to_may_set_any_flag(append: str) -> None:
    assert _pp(f'ARGS=(--hidden-size 1024)\n{append}{RUN} "${{ARGS[@]}}"\n') is UNKNOWN


def test_a_string_a_test_appends_known_text_to_is_read_as_written() -> None:
    """The script's own text on a branch: PP 2 stands (nothing appended can set it)."""
    assert _pp(f'ARGS="--seed 1"\nif [ -n "$X" ]; then ARGS="$ARGS --log-interval 1"; fi\n{RUN} $ARGS\n') == 2


def test_a_guard_that_exits_stays_a_check_of_the_callers_environment() -> None:
    """`[ -z "${X:-}" ] && { echo ...; exit 1; }` is read as before (bash.walk `_exit`): the walk
    goes on, the command after it followed."""
    config = parse_launch(HEAD + f'[ -z "${{BASE:-}}" ] && {{ echo "set BASE"; exit 1; }}\n{RUN}\n', "train.sh")
    assert config.flags["pipeline_model_parallel_size"].value == "2"
    assert any(d.kind == "launch.caller-guard" for d in config.diagnostics)


@pytest.mark.parametrize("read", ['read -ra ARR <<< "${X:-}"\n', 'read -r -a ARR <<< "$X"\n',
                                  "read -r -a ARR < extra.txt\n", 'IFS=" " read -ra ARR <<< "${X:-} --seed 1"\n'])
def test_an_array_read_from_words_not_known_holds_any_words(read: str) -> None:
    assert _pp(f'{read}{RUN} "${{ARR[@]}}"\n') is UNKNOWN


def test_an_array_read_from_known_text_holds_its_words() -> None:
    """`read -r -a` of a default with text (conversion.sh:63-64): the script's words, split."""
    config = parse_launch(HEAD + 'read -r -a ARR <<< "${EXTRA:---seed 7 --log-interval 1}"\n'
                          f'{RUN} "${{ARR[@]}}"\n', "train.sh")
    assert config.flags["seed"].value == "7" and config.flags["log_interval"].value == "1"
    assert config.unknown_words == []


@pytest.mark.parametrize("loop", [
    'for a in $EXTRA; do ARGS="$ARGS --$a"; done\n',
    'for a in ${EXTRA:-}; do ARGS="$ARGS --$a"; done\n',
    'for a in $EXTRA; do ARGS="$ARGS $a"; done\n',
    'for a in ${EXTRA:-}; do ARGS+=("--$a"); done\n',
])
def test_a_string_built_in_a_loop_over_the_callers_words_may_set_any_flag(loop: str) -> None:
    start, words = ("ARGS=()", '"${ARGS[@]}"') if "+=(" in loop else ('ARGS=""', "$ARGS")
    assert _pp(f"{start}\n{loop}{RUN} {words}\n") is UNKNOWN


def test_a_loop_over_known_words_builds_known_flags() -> None:
    assert _pp(f'ARGS=""\nfor a in seed=1 bf16; do ARGS="$ARGS --$a"; done\n{RUN} $ARGS\n') == 2


@pytest.mark.parametrize("append", [
    'if [ -n "${PP:-}" ]; then ARGS="$ARGS --pipeline-model-parallel-size=${PP}"; fi\n',
    'if [ ! -z "${PP:-}" ]; then ARGS="$ARGS --pipeline-model-parallel-size=${PP}"; fi\n',
    'if [ -n "${EXTRA:-}" ]; then ARGS="$ARGS -$EXTRA"; fi\n',
])
def test_a_string_a_test_extends_with_the_callers_words_glued_to_a_flag_may_set_any(append: str) -> None:
    """`ARGS="$ARGS --pipeline-model-parallel-size=${PP}"` (`-$EXTRA`) under a test of the caller's
    variable: its text is the caller's, so the flags ARGS sets are unknown (review r38-inner 1;
    before: PP 1, CLEAN, the flag glued to the caller's word read as the script's own)."""
    body = f'ARGS="--seed 1"\n{append}{RUN.replace(" --pipeline-model-parallel-size 2", "")} $ARGS\n'
    assert _pp(body) is UNKNOWN
