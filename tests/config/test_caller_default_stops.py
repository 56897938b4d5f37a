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


@pytest.mark.parametrize("guard", [
    '[ "${RUN_EVAL:-0}" = 1 ] || exit 0\n' + RUN.replace("size 4", "size 3"),
    'if [[ "${STAGE:-pretrain}" == "pretrain" ]]; then\n  ' + RUN + '  exit 0\nfi\n' + RUN.replace("size 4", "size 3"),
    'case "${MODE:-train}" in\n  train) ' + RUN.rstrip() + '; exit 0 ;;\nesac\n' + RUN.replace("size 4", "size 3"),
])
def test_the_default_runs_exit_after_its_training_command_ends_the_walk(guard: str) -> None:
    """Past a training command, a caller-default exit ends the default run (review h41 item 1):
    only before any training command is it a check of the caller's environment. Reading on took
    the pp3 command (3 stages of 8 GPUs) as the run's and said DOES NOT START."""
    body = guard if guard.startswith(("if", "case")) else RUN + guard
    config = parse_launch(HEAD + body, "train.sh", environ={})
    assert config.commands == 1 and config.flags["pipeline_model_parallel_size"].value == "4"
    assert not [d for d in config.diagnostics if d.kind == "launch.caller-guard"]
