"""An `exit` a test of the caller's variable leads to, where only the script's fallback for it
decides the test, spelled in the test itself (review r40-holes item 4, r39-inner minor): `[ "${VERBOSE:-0}" = 1 ] || exit 1`
read DOES NOT START, as the script stopped there, while the caller that sets VERBOSE=1 goes on.
The `&&`/`||`, `if` and `case` paths took the default as the run's value; one place (bash.walk
`_stops`) now decides a stop, and a stop resting on a caller's default is no sure stop; a value
the script states (`X=${X:-0}` before the test) still decides it.

The shape of NVIDIA/Megatron-LM d98e8a64dd tests/performance_tests/shell_test_utils/
run_perf_test.sh:318 (`if [[ "${SKIP_COMPARE:-0}" == "1" ]]; then ... exit 0; fi`), with the
default on the exiting side.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from auditor.config.launch import ScriptExits, parse_launch

HEAD = "#!/bin/bash\n# megatron-core==0.17.0\n# torch==2.10.0\nset -euo pipefail\n"
RUN = ("torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 24 --hidden-size 1024 "
       "--num-attention-heads 16 --micro-batch-size 1 --global-batch-size 8 --seq-length 1024 "
       "--max-position-embeddings 1024 --pipeline-model-parallel-size 4\n")


def _bash_reaches(body: str, env: dict[str, str]) -> bool:
    """What bash itself does with the script, the training command replaced by an echo."""
    done = subprocess.run(["bash", "-c", body + "echo REACHED\n"], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}, check=False)
    return "REACHED" in done.stdout


@pytest.mark.parametrize("guard", [
    '[ "${VERBOSE:-0}" = 1 ] || exit 1\n',
    '[[ "${VERBOSE:-0}" != 1 ]] && { echo "set VERBOSE=1"; exit 1; }\n',
    'if [ "${VERBOSE:-0}" != 1 ]; then\n  echo "set VERBOSE=1"\n  exit 1\nfi\n',
    'if [[ "${VERBOSE:-0}" == 1 ]]; then echo on; else exit 1; fi\n',
    'case "${VERBOSE:-0}" in\n  1) ;;\n  *) exit 1 ;;\nesac\n',
])
def test_an_exit_the_callers_default_decides_is_no_sure_stop(guard: str) -> None:
    assert not _bash_reaches(HEAD + guard, {}) and _bash_reaches(HEAD + guard, {"VERBOSE": "1"})
    config = parse_launch(HEAD + guard + RUN, "train.sh", environ={})
    assert config.launcher == "torchrun pretrain_gpt.py"
    said = [d for d in config.diagnostics if d.kind == "launch.caller-guard"]
    assert len(said) == 1 and "VERBOSE" in said[0].message


@pytest.mark.parametrize("guard", [
    'VERBOSE=0\n[ "$VERBOSE" = 1 ] || exit 1\n',
    # the script states its value (tests/realscripts/test_bash_caller_guard.py `MODE=${MODE:-mock}`)
    'VERBOSE=${VERBOSE:-0}\n[ "$VERBOSE" = 1 ] || exit 1\n',
    'if [ "${VERBOSE:-0}" = 1 ]; then exit 1; fi\nexit 1\n',
])
def test_an_exit_the_script_itself_decides_still_ends_it(guard: str) -> None:
    assert not _bash_reaches(HEAD + guard, {"VERBOSE": "1"} if "VERBOSE=0" in guard else {})
    with pytest.raises(ScriptExits):
        parse_launch(HEAD + guard + RUN, "train.sh", environ={})


LATER = RUN.replace("size 4", "size 3")


@pytest.mark.parametrize("guard, caller", [
    ('[ "${RUN_EVAL:-0}" = 1 ] || exit 0\n' + LATER, "RUN_EVAL"),
    ('[ "${RUN_EVAL:-0}" = 1 ]\n' + LATER, "RUN_EVAL"),  # `set -e` ends it where the test fails
    ('[ -n "${RUN_EVAL:-}" ] || exit 0\n' + LATER, "RUN_EVAL"),
    ('if [[ "${STAGE:-pretrain}" == "pretrain" ]]; then\n  ' + RUN + '  exit 0\nfi\n' + LATER, "STAGE"),
    ('case "${MODE:-train}" in\n  train) ' + RUN.rstrip() + '; exit 0 ;;\nesac\n' + LATER, "MODE"),
])
def test_a_stop_past_a_training_command_leaves_the_rest_to_the_caller(guard: str, caller: str) -> None:
    """Past a training command, a stop the caller's variable decides ends the default run, and the
    commands after it run where the caller gives it (review h42 items 5 and 6): h41 ended the walk
    there, dropping the later command silently, and a `set -e` failure there still read "may stop
    before the training command". Each command is judged, the later one named as the caller's
    choice, never read as the default run's. A stop after the training command, before a later
    one: NVIDIA-NeMo/Megatron-Bridge 067f987df0 examples/models/qwen/qwen3_omni/
    local_train_thinker_full.sh:452 (`if [[ "${ENABLE_PERF_SUMMARY}" != "1" ]]; then exit 0; fi`,
    its value stated at line 97)."""
    body = guard if guard.startswith(("if", "case")) else RUN + guard
    # the case form writes RUN without its newline: replace the bare text, so bash never starts torchrun
    marked = (HEAD + body).replace(RUN.rstrip(), "echo FIRST").replace(LATER.rstrip(), "echo LATER")
    assert "torchrun" not in marked
    assert "LATER" not in _ran(marked, {}) and "LATER" in _ran(marked, {caller: "1" if caller == "RUN_EVAL" else "x"})
    config = parse_launch(HEAD + body, "train.sh", environ={})
    assert config.commands == 2 and config.flags["pipeline_model_parallel_size"].value == "4"
    later = parse_launch(HEAD + body, "train.sh", environ={}, which=1)
    assert later.flags["pipeline_model_parallel_size"].value == "3"
    said = [d for d in later.diagnostics if d.kind == "launch.caller-runs"]
    assert len(said) == 1 and f"only where the caller sets {caller}" in said[0].message
    # commandcases tells the default run's commands by this, per document, never by line
    assert said[0].detail["commands"] == [2] and said[0].detail["caller_only"] and said[0].detail["names"] == caller
    assert not [d for d in later.diagnostics if d.kind in ("launch.caller-guard", "launch.may-stop")]


def test_a_failing_test_after_the_last_training_command_is_no_stop_before_it() -> None:
    """`set -e` and a test of the caller's default failing after the only training command: the
    run trained; it is no "may stop before the training command" (review h42 item 6)."""
    config = parse_launch(HEAD + RUN + '[ "${RUN_EVAL:-0}" = 1 ]\n', "train.sh", environ={})
    assert config.commands == 1
    assert not [d for d in config.diagnostics if d.kind in ("launch.may-stop", "launch.caller-runs")]


def _ran(body: str, env: dict[str, str]) -> str:
    """What bash itself prints running the script, its training commands replaced by echoes."""
    return subprocess.run(["bash", "-c", body], capture_output=True, text=True, check=False,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}).stdout


def test_past_a_conversion_the_training_command_the_caller_lets_run_is_judged() -> None:
    """A checkpoint conversion, then `[ "${TRAIN:-0}" = 1 ] || exit 0`, then the training command:
    h41 ended the walk at the exit and read the conversion as the run (NOT A PIPELINE RUN); the
    training command runs where the caller sets TRAIN, and is judged, saying so."""
    body = ("python -m deepspeed.checkpoint.ds_to_universal --input_folder a --output_folder b\n"
            '[ "${TRAIN:-0}" = 1 ] || exit 0\n' + RUN)
    config = parse_launch(HEAD + body, "train.sh", environ={})
    assert config.launcher == "torchrun pretrain_gpt.py" and config.flags["pipeline_model_parallel_size"].value == "4"
    said = [d for d in config.diagnostics if d.kind == "launch.caller-runs"]
    assert len(said) == 1 and "only where the caller sets TRAIN" in said[0].message


@pytest.mark.parametrize("body", [
    "for pp in 4 3; do\n  " + RUN.replace("size 4", "size $pp") + '  [ "${RUN_EVAL:-0}" = 1 ] || exit 0\ndone\n',
    RUN.rstrip() + '; [ "${RUN_EVAL:-0}" = 1 ] || exit 0; ' + LATER,
])
def test_commands_sharing_a_line_are_told_apart_by_their_place_in_the_run(body: str) -> None:
    """review r43-scan-shell item 1: a loop's commands, or two on one line around the caller's
    stop, share a line; the caller-runs finding named the later command by line, so commandcases
    took the first (the default run's) for the caller's too and showed the second's DOES NOT START.
    Each document now says whether its own command is past the stop (bash runs only the first)."""
    marked = (HEAD + body).replace("torchrun", "echo RAN")
    assert _ran(marked, {}).count("RAN") == 1 and _ran(marked, {"RUN_EVAL": "1"}).count("RAN") == 2
    first, later = (parse_launch(HEAD + body, "train.sh", environ={}, which=k) for k in (0, 1))
    assert first.command_line == later.command_line
    assert [first.flags["pipeline_model_parallel_size"].value, later.flags["pipeline_model_parallel_size"].value] \
        == ["4", "3"]
    said = [next(d for d in c.diagnostics if d.kind == "launch.caller-runs") for c in (first, later)]
    assert [d.detail["caller_only"] for d in said] == [False, True] and said[1].detail["commands"] == [2]


@pytest.mark.parametrize("read", ["source ./stage2.env\n", ". ./stage2.env\n", "set -a\nsource ./stage2.env\nset +a\n",
                                  'eval "$(cat ./stage2.env)"\n'])
@pytest.mark.parametrize("test", ['"$RUN_EVAL"', '"${RUN_EVAL:-0}"'])
def test_a_stop_after_unread_code_is_no_callers_stop(read: str, test: str) -> None:
    """review r44-scan b08/b13: `source ./stage2.env` (not read), then `if [ "$RUN_EVAL" != 1 ];
    then exit 0; fi` between two trainings: the file may set RUN_EVAL, so the stop is not the
    caller's, and the first command is not "the run as launched"; both stay judged, neither the
    default run (the branch read the stop as the caller's, and CLEAN from the first command)."""
    body = RUN + read + f"if [ {test} != 1 ]; then exit 0; fi\n" + LATER
    config = parse_launch(HEAD + body, "train.sh", environ={})
    assert config.commands == 2
    for k in (0, 1):
        said = parse_launch(HEAD + body, "train.sh", environ={}, which=k).diagnostics
        assert not [d for d in said if d.kind in ("launch.caller-runs", "launch.caller-guard")]
