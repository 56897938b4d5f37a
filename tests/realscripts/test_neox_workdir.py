"""Where GPT-NeoX's deepy.py opens its config files: from the directory the command runs in,
which a runner's working-directory option (`conda run --cwd DIR`) or a `cd DIR` before it moves,
and with the last `-d DIR` joined onto every file wherever `-d` stands (issue 22 item 5; review
h31-review holes 4 and 5: each read the checkout's other configs/ and said NOT A PIPELINE RUN for
a run of two stages).

Written after EleutherAI/gpt-neox (commit ea7aefd8f8e183256992d9fede4d7c71a46d67a5):
post-training/online_example.sh:7 (`conda run --no-capture-output -n neox python deepy.py train.py
post-training/configs/llama3-8b-reinforce.yml`), README.md:533 (`python ./deepy.py train.py -d
configs 125M.yml local_setup.yml`) and megatron/neox_arguments/arguments.py:318 (`"--conf_dir",
"-d"`, one option of argparse, the last given kept) and :414-416 (`conf_files =
[os.path.join(args_parsed.conf_dir, f) for f in conf_files]`, after parsing). conda's `--cwd`:
conda 25.x `conda run --help` ("Current working directory for command to run in").
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from auditor.config.derive import derive
from auditor.config.launch import read_launch
from auditor.scan import resolve_targets

DS_RELEASE = "0.16.5"  # the DeeperSpeed the checkout pins (tests/realscripts/test_stacks_neox.py)
CONFIG = '{{\n  # parallelism settings\n  "pipe_parallel_size": {size},\n  "model_parallel_size": 1,\n}}\n'


def _checkout(tmp_path: Path, command: str, top: int = 0, prod: int = 2) -> Path:
    """A checkout whose own configs/run.yml has `top` stages and whose prod/ copy has `prod`."""
    for where, size in ((tmp_path, top), (tmp_path / "prod", prod)):
        (where / "configs").mkdir(parents=True)
        (where / "configs" / "run.yml").write_text(CONFIG.format(size=size), encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\n{command}\n", encoding="utf-8")
    return script


def _size(script: Path) -> object:
    launch = read_launch(script)
    if [d for d in launch.diagnostics if d.kind == "launch.unknown-stack"]:
        return "unknown"
    if [d for d in launch.diagnostics if d.kind == "launch.not-pipeline"]:
        return "one stage or none"
    return derive(launch, {"deepspeed": DS_RELEASE}, None, "2.13.0").value("pipeline_model_parallel_size")


@pytest.mark.parametrize("command", [
    "conda run --no-capture-output -n neox --cwd prod python deepy.py train.py configs/run.yml",
    "conda run --cwd=prod -n neox python deepy.py train.py configs/run.yml",
    "cd prod\nconda run --no-capture-output -n neox python deepy.py train.py configs/run.yml",
    "cd prod\npython ./deepy.py train.py configs/run.yml",
    "cd prod && python ./deepy.py train.py configs/run.yml",
])
def test_the_files_are_opened_where_the_command_runs(tmp_path, command):
    assert _size(_checkout(tmp_path, command)) == 2


def test_the_runner_s_directory_is_joined_to_a_cd_before_it(tmp_path):
    (tmp_path / "jobs").mkdir()
    script = _checkout(tmp_path, "cd jobs\nconda run -n neox --cwd ../prod python deepy.py train.py configs/run.yml")
    assert _size(script) == 2


@pytest.mark.parametrize("command", [
    # a directory not known statically: where the files are opened is unknown
    "conda run -n neox --cwd $JOB_DIR python deepy.py train.py configs/run.yml",
    "cd $JOB_DIR\npython ./deepy.py train.py configs/run.yml",
    # an option word not known statically may be `--cwd DIR` (gpt-neox has none; a wrapper may)
    "conda run $CONDA_OPTS python deepy.py train.py configs/run.yml",
    # a `cd` in a branch may not run
    'if [ -n "$PROD" ]; then cd prod; fi\npython ./deepy.py train.py configs/run.yml',
])
def test_a_directory_not_known_leaves_the_files_unknown(tmp_path, command):
    assert _size(_checkout(tmp_path, command, top=0, prod=0)) == "unknown"


def test_a_file_missing_where_the_command_runs_is_unknown_not_the_checkout_s(tmp_path):
    # prod/ holds no configs/other.yml; the checkout's own configs/other.yml is not the file
    script = _checkout(tmp_path, "conda run -n neox --cwd prod python deepy.py train.py configs/other.yml")
    (tmp_path / "configs" / "other.yml").write_text(CONFIG.format(size=0), encoding="utf-8")
    assert _size(script) == "unknown"


def test_the_last_conf_dir_is_joined_wherever_it_stands(tmp_path):
    # deepy.py train.py a.yml -d configs: argparse keeps -d and the files, then joins them
    script = _checkout(tmp_path / "x", "python deepy.py train.py run.yml -d configs")
    (tmp_path / "x" / "run.yml").write_text(CONFIG.format(size=0), encoding="utf-8")
    (tmp_path / "x" / "configs" / "run.yml").write_text(CONFIG.format(size=3), encoding="utf-8")
    assert _size(script) == 3
    script.write_text("python deepy.py train.py -d nowhere run.yml -d configs\n", encoding="utf-8")
    assert _size(script) == 3


def test_files_on_both_sides_of_conf_dir_are_unknown(tmp_path):
    # argparse takes one run of positionals for conf_file (nargs="+"): `b.yml` after `-d DIR` is
    # left over and parse_args stops; not read as a setting either way
    script = _checkout(tmp_path, "python deepy.py train.py run.yml -d configs run.yml", top=2, prod=2)
    (tmp_path / "run.yml").write_text(CONFIG.format(size=2), encoding="utf-8")
    assert _size(script) == "unknown"


def test_a_versioned_interpreter_runs_deepy(tmp_path):
    assert _size(_checkout(tmp_path, "python3.10 deepy.py train.py configs/run.yml", top=2)) == 2


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="no deepspeed installed here")
def test_an_installed_copy_no_one_stated_is_named_so(tmp_path):
    # issue 22 item 1: this machine's deepspeed is evidence about the laptop, not the cluster; a
    # header naming it must say that neither the script nor --target stated it
    # (the `ppbugs` extra installs one)
    launch = read_launch(_checkout(tmp_path, "python ./deepy.py train.py configs/run.yml", top=2))
    (target,) = resolve_targets(launch, None)
    assert target.kind == "installed" and target.label.endswith("(installed here, none stated)")
    script = tmp_path / "run.sh"
    script.write_text("# deepspeed==0.16.5\n" + script.read_text(), encoding="utf-8")
    assert "none stated" not in resolve_targets(read_launch(script), ["deepspeed"])[0].label
