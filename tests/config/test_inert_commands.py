"""Commands known to start nothing that trains (turn 26, h46-inert): a script made of them alone
is NOT A PIPELINE RUN, where before it was "the training command could not be followed".

- A docs server: THUDM/slime at commit 624b824a898ab0ec1fcb4d373004c7f3852bf515, docs/serve.sh:
  `cd "$SCRIPT_DIR"` (:7), then `python -m http.server -d ./build "$PORT"` (:15) and `exit $?`
  (:16). `python -m http.server` is a standard-library module serving files (Python docs,
  "http.server", command-line interface); with `--cgi` it runs CGI scripts, code of the run's.
  `exit $?` ends the script with its last command's status: no run that fails to start.
- A CI lock: modelscope/ms-swift at commit 3602360a562313afbf2ef6065fdf61f271a2c5b9,
  .dev_scripts/dockerci_npu.sh: `exec {lock_fd}>"/tmp/npu$npu" || exit 1` (:17) opens a
  descriptor and assigns its number to lock_fd (bash(1) REDIRECTION, "{varname}"), no command
  `{lock_fd}`; `flock -n "$lock_fd" || ...` (:18) takes the lock and runs nothing (util-linux
  flock(1) `flock [options] number`); `flock FILE COMMAND` runs COMMAND, judged as any.
- A third-party module: alibaba/ROLL at commit 8eb27cc2dc34c4d1310b169d9b86d339004d811a,
  examples/qwen3_agentic_gem/start_retrieval_server.sh:86, `python -m
  gem.tools.search_engine.retrieval_server ... &`, its package not in the checkout: the
  message names the module, not "runs `python`".
Negatives stay undecided: `--cgi`, `python -m unittest` (runs code it is given), `$CMD`, an
`eval` of text not known, `source ~/.bashrc`, `"$SHELL" <(curl ...)`, `flock FILE -c CMD`, an
unquoted unknown `flock` operand; `exit 1` before any training stays DOES NOT START.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import ScriptExits, parse_launch
from auditor.config.sourced_by import sourced_by
from tests.launch_outcome import not_pipeline, scan, undecided

SERVE = """#!/usr/bin/env bash

SCRIPT_DIR=$( cd -- "$( dirname -- "${BASH_SOURCE[0]}" )" &> /dev/null && pwd )
LANG="${1:-all}"
PORT="${PORT:-8000}"

cd "$SCRIPT_DIR"

if [ "$LANG" = "all" ]; then
    echo "[serve] Serving multi-language docs root on http://localhost:$PORT (en/, zh/)"
    python -m http.server -d ./build "$PORT"
    exit $?
fi
python -m http.server -d ./build/$LANG "$PORT\""""

LOCK = """npus='0,1 2,3'
for npu in $npus
do
  exec {lock_fd}>"/tmp/npu$npu" || exit 1
  flock -n "$lock_fd" || { echo "WARN: npu $npu is in use!" >&2; continue; }
  make html
  break
done
"""


def test_a_docs_server_that_exits_with_its_status_starts_no_training(tmp_path: Path) -> None:
    what = not_pipeline(SERVE, tmp_path / "serve.sh")
    assert "`python -m http.server`" in what


def test_a_stdlib_server_after_a_cd_starts_no_training(tmp_path: Path) -> None:
    assert "`python -m http.server`" in not_pipeline("cd docs\npython -m http.server -d build 8000\n",
                                                      tmp_path / "s.sh")


def test_a_descriptor_lock_runs_no_command(tmp_path: Path) -> None:
    what = not_pipeline(LOCK, tmp_path / "ci.sh")
    assert "`flock`" in what and "`make html`" in what and "lock_fd" not in what


def test_flock_with_a_command_runs_it(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\n")
    text = "flock /tmp/l torchrun --nproc_per_node 2 train.py\n"
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))
    assert config.launcher.startswith("torchrun") and config.nproc_per_node == 2


def test_flock_judges_its_command_after_the_lock_file(tmp_path: Path) -> None:
    assert "`mytrainer`" in undecided("flock 9 mytrainer rm x\n", tmp_path / "a.sh")
    assert "`make html`" in not_pipeline("flock -w 5 /tmp/l make html\n", tmp_path / "b.sh")


def test_flock_with_a_command_string_is_not_read(tmp_path: Path) -> None:
    said = undecided('flock /tmp/l -c "cd x && torchrun train.py"\n', tmp_path / "a.sh")
    assert "`flock`, whose `-c` runs a command string" in said


def test_an_unquoted_unknown_lock_operand_may_hold_a_command(tmp_path: Path) -> None:
    assert "`$fd`" in undecided("flock -n $fd\n", tmp_path / "a.sh")


def test_a_descriptor_variable_run_as_a_command_stays_unknown(tmp_path: Path) -> None:
    assert "not known statically" in undecided("exec {fd}>/tmp/l\n$CMD\n", tmp_path / "a.sh")


def test_http_server_with_cgi_runs_code(tmp_path: Path) -> None:
    assert "`--cgi`" in undecided("python -m http.server --cgi 8000\n", tmp_path / "a.sh")


def test_a_stdlib_module_that_runs_code_given_it_stays_undecided(tmp_path: Path) -> None:
    said = undecided("python -m unittest discover\n", tmp_path / "a.sh")
    assert "`python -m unittest`, a standard-library module that runs code" in said


def test_a_pythonpath_not_known_may_shadow_a_stdlib_module(tmp_path: Path) -> None:
    said = undecided("export PYTHONPATH=$X:src\npython -m http.server\n", tmp_path / "a.sh")
    assert "PYTHONPATH" in said


def test_a_third_party_module_not_here_is_named(tmp_path: Path) -> None:
    said = undecided("python -m gem.tools.search_engine.retrieval_server --num_workers 1 &\n", tmp_path / "a.sh")
    assert "line 1 runs `python -m gem.tools.search_engine.retrieval_server`, whose module is not found here" in said


@pytest.mark.parametrize("text", [
    'eval "IMAGE=\\$$IMAGE"\nmake html\n',
    "source ~/.bashrc\nmake html\n",
    'yes \'\' | "${SHELL}" <(curl -L micro.mamba.pm/install.sh)\n',
])
def test_code_not_read_stays_undecided(tmp_path: Path, text: str) -> None:
    assert "could not be followed" in undecided(text, tmp_path / "a.sh")


def test_a_failing_exit_before_training_still_does_not_start(tmp_path: Path) -> None:
    with pytest.raises(ScriptExits):
        scan("pip install x\nexit 1\ntorchrun train.py\n", tmp_path / "a.sh")


ARGUMENTS = """#!/bin/bash
set -e
if [ -z ${MLM_ENV_SETUP} ]; then
    printf "MLM_ENV_SETUP not set\\n"
else
    source ${MLM_ENV_SETUP}
fi
LAUNCH_SCRIPT="torchrun --nproc_per_node=${NUM_GPUS:-1}"
"""


def test_a_helper_other_scripts_source_names_them(tmp_path: Path) -> None:
    """NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553
    examples/post_training/modelopt/conf/arguments.sh :38-42 sources the caller's ${MLM_ENV_SETUP};
    quantize.sh and 11 more beside conf/ read it with `source "${SCRIPT_DIR}/conf/arguments.sh"`."""
    (tmp_path / "modelopt" / "conf").mkdir(parents=True)
    caller = 'SCRIPT_DIR="$(dirname "$(readlink -f "$0")")"\nsource "${SCRIPT_DIR}/conf/arguments.sh"\n${LAUNCH_SCRIPT} q.py\n'
    (tmp_path / "modelopt" / "quantize.sh").write_text(caller)
    (tmp_path / "modelopt" / "notes.sh").write_text("echo conf/arguments.sh\n")
    said = undecided(ARGUMENTS, tmp_path / "modelopt" / "conf" / "arguments.sh")
    assert "1 script(s) beside it source it (modelopt/quantize.sh): audit one of them" in said


def test_a_script_no_other_sources_names_none(tmp_path: Path) -> None:
    assert "source it" not in undecided(ARGUMENTS, tmp_path / "arguments.sh")


def test_sourced_by_reads_source_and_dot_lines_only(tmp_path: Path) -> None:
    (tmp_path / "a" / "conf").mkdir(parents=True)
    helper = tmp_path / "a" / "conf" / "args.sh"
    helper.write_text("X=1\n")
    (tmp_path / "a" / "conf" / "peer.sh").write_text(". ./args.sh\n")
    (tmp_path / "a" / "run.sh").write_text('source "$D/conf/args.sh" # settings\n')
    (tmp_path / "a" / "other.sh").write_text("source conf/my_args.sh\ncat conf/args.sh\n")
    assert sourced_by(str(helper)) == ["a/conf/peer.sh", "a/run.sh"]


# Review r46-a (turn 26): the reviewer's cases under /tmp/rv46-a/c/, as small scripts.

def test_a_module_of_its_name_in_the_directory_moved_to_shadows_the_stdlib_one(tmp_path: Path) -> None:
    (tmp_path / "tools" / "http").mkdir(parents=True)
    (tmp_path / "tools" / "http" / "__init__.py").write_text("")
    (tmp_path / "tools" / "http" / "server.py").write_text("import torch\n")
    said = undecided(f"cd {tmp_path}/tools\npython -m http.server\n", tmp_path / "m2.sh")
    assert "`python -m http.server`, whose name the directory the script moved to" in said


def test_a_pythonpath_of_the_command_not_known_may_shadow_a_stdlib_module(tmp_path: Path) -> None:
    assert "PYTHONPATH" in undecided("PYTHONPATH=$X python -m http.server\n", tmp_path / "m6.sh")


@pytest.mark.parametrize("text", [
    "serve() {\n  python -m http.server 8000\n  exit $?\n}\nserve &\ntorchrun --nproc_per_node 2 train.py\n",
    "{ make html; exit 0; } &\ntorchrun --nproc_per_node 2 train.py\n",
    "f() { make html; exit 0; }\nf &\ntorchrun --nproc_per_node 2 train.py\n",
    "make html\nexit 0 &\ntorchrun --nproc_per_node 2 train.py\n",
])
def test_an_exit_in_a_background_job_ends_only_that_job(tmp_path: Path, text: str) -> None:
    (tmp_path / "train.py").write_text("import torch\n")
    (tmp_path / "run.sh").write_text(text)
    assert parse_launch(text, str(tmp_path / "run.sh")).launcher.startswith("torchrun")


def test_training_after_an_exit_of_the_last_status_never_runs(tmp_path: Path) -> None:
    """What follows `exit 0` never runs and decides nothing (h47-shell): the script ran `make html`."""
    (tmp_path / "train.py").write_text("import torch\n")
    assert "`make html`" in not_pipeline("make html\nexit 0\ntorchrun --nproc_per_node 2 train.py\n",
                                          tmp_path / "e15.sh")


def test_a_failing_exit_before_training_still_does_not_start(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\n")
    with pytest.raises(ScriptExits):
        scan("make html\nexit 1\ntorchrun --nproc_per_node 2 train.py\n", tmp_path / "e15.sh")


@pytest.mark.parametrize("text", ["make html\nexit\n", "make html\nexit ${RC:-0}\n"])
def test_an_exit_after_inert_commands_alone_is_no_run(tmp_path: Path, text: str) -> None:
    assert "`make html`" in not_pipeline(text, tmp_path / "e4.sh")


def test_flock_with_an_option_not_read_is_named(tmp_path: Path) -> None:
    said = undecided('flock --command "torchrun train.py" /tmp/l\n', tmp_path / "f.sh")
    assert "`flock`, whose option `--command` is not read here" in said


def test_a_cd_to_a_directory_not_known_may_hold_a_shadowing_module(tmp_path: Path) -> None:
    said = undecided("cd $DOCS\npython -m http.server\n", tmp_path / "a.sh")
    assert "`python -m http.server`, run in a directory not known statically" in said


def test_the_script_directory_idiom_with_blanks_inside_its_substitution_is_known(tmp_path: Path) -> None:
    """slime docs/serve.sh:3 spells `$( cd -- "$( dirname -- "${BASH_SOURCE[0]}" )" &> /dev/null && pwd )`."""
    text = ('D=$( cd -- "$( dirname -- "${BASH_SOURCE[0]}" )" &> /dev/null && pwd )\n'
            'cd "$D"\npython -m http.server\n')
    assert "`python -m http.server`" in not_pipeline(text, tmp_path / "a.sh")
