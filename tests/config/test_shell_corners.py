"""Corners of bash the launch reader met wrong (turn 27, h47-shell), each checked with real bash
(`bash -c` with echo stubs):

- Code after an unconditional `exit 0`/`exit $?` never runs and decides nothing: `echo start;
  exit $?; python gen.py` was DOES NOT START (`python gen.py` may train), where the script runs
  `echo` and ends well: no run. THUDM/slime 624b824a898ab0ec1fcb4d373004c7f3852bf515
  docs/serve.sh:15-16 ends a branch with `exit $?` after its command. `exit 1` stays a stop.
- A function defined inside a background job (`f() { ...; } &`) ends with the job's subshell
  (bash(1) Lists): a later `f` is "command not found", not the training command; one defined
  before and run as `f &` still trains.
- Only a shell takes `-c` text, and only before its first operand (bash(1) INVOCATION: "commands
  are read from the first non-option argument"): `sbatch -c 8 job.sh` is --cpus-per-task,
  `bash job.sh -c X` runs job.sh with `-c X` its arguments, `bash -o pipefail -c TEXT` and `bash
  -c -e TEXT` run TEXT. No fetched upstream tree uses these three spellings; the scripts here
  reproduce them.
- A program option's command line (rules `command_options`) is judged as the line it is, not by its
  first word: `rsync --rsync-path="cd /opt && torchrun ..."` (rsync(1): "any program, script or
  command sequence", run by the remote shell) may train; `-e "ssh -p 2222"` runs ssh alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, ScriptExits, parse_launch

TRAIN = "torchrun --nproc_per_node 4 train.py"


@pytest.fixture(autouse=True)
def _launch_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # where `bash job.sh` opens job.sh


def _parse(text: str, tmp_path: Path, name: str = "run.sh"):  # type: ignore[no-untyped-def]
    (tmp_path / "train.py").write_text("import torch\n")
    (tmp_path / name).write_text(text)
    return parse_launch(text, str(tmp_path / name))


@pytest.mark.parametrize("text", [
    "echo start\nexit $?\npython gen.py\n",
    "echo start\nexit $?\n" + TRAIN + "\n",
    "X=1\nexit 0\n" + TRAIN + "\n",
    "echo start\nexit ${?}\n" + TRAIN + "\n",  # r47-final e42: the braced spelling, as bash reads it
    'echo start\nexit "$?"\n' + TRAIN + "\n",
])
def test_code_after_an_exit_of_the_last_status_decides_nothing(tmp_path: Path, text: str) -> None:
    with pytest.raises(NotAPipelineRun):
        _parse(text, tmp_path)


def test_a_failing_exit_before_training_still_does_not_start(tmp_path: Path) -> None:
    with pytest.raises(ScriptExits):
        _parse("echo start\nexit 1\n" + TRAIN + "\n", tmp_path)


def test_a_function_defined_in_a_background_job_is_gone_after_it(tmp_path: Path) -> None:
    with pytest.raises(CommandNotFollowed, match="could not be followed"):
        _parse(f"f() {{ {TRAIN} ; }} &\nwait\nf\n", tmp_path)


def test_a_function_run_in_the_background_still_trains(tmp_path: Path) -> None:
    config = _parse(f"f() {{ {TRAIN} ; }}\nf &\nwait\n", tmp_path)
    assert config.launcher.startswith("torchrun") and config.nproc_per_node == 4


@pytest.mark.parametrize("line", [
    "sbatch -c 8 job.sh",
    'bash job.sh -c "torchrun --nproc_per_node 2 train.py"',
])
def test_a_c_option_that_gives_no_shell_text_leaves_the_script_run(tmp_path: Path, line: str) -> None:
    (tmp_path / "job.sh").write_text(f"#!/bin/bash\n{TRAIN}\n")
    config = _parse(f"#!/bin/bash\n{line}\n", tmp_path)
    assert config.launcher.startswith("torchrun") and config.nproc_per_node == 4


@pytest.mark.parametrize("options", ["-o pipefail -c", "-eo pipefail -c", "-c -e", "-O extglob -lc"])
def test_shell_options_before_the_c_text_are_read_past(tmp_path: Path, options: str) -> None:
    config = _parse(f'bash {options} "{TRAIN}"\n', tmp_path)
    assert config.launcher.startswith("torchrun") and config.nproc_per_node == 4


@pytest.mark.parametrize("option", ['--rsync-path="cd /opt && {t}"', '-e "cd /opt && {t}"'])
def test_a_command_line_an_option_runs_is_judged_whole(tmp_path: Path, option: str) -> None:
    with pytest.raises(CommandNotFollowed, match="rsync`, whose `-"):
        _parse(f"rsync -av {option.format(t=TRAIN)} src host:dst\n", tmp_path)


def test_a_remote_shell_option_alone_runs_no_training(tmp_path: Path) -> None:
    with pytest.raises(NotAPipelineRun):
        _parse('rsync -av -e "ssh -p 2222" src host:dst\n', tmp_path)


@pytest.mark.parametrize(("text", "said"), [
    ("echo start; exit 0; {t}\n", "ends at line 1 with `exit 0`.*the `torchrun` at line 1 never runs"),
    ("set -e\necho hi\nexit $?\n{t}\n", "ends at line 3 with `exit \\$\\?`.*the `torchrun` at line 4 never runs"),
    ("for i in 1; do exit 0; done\n{t}\n", "ends at line 1 with `exit 0`.*the `torchrun` at line 2 never runs"),
    # h48-shell: an exit inside a function ends the script at the call; the call is not what it skips
    ("run() {{ exit 0; }}\nrun\n{t}\n",
     "ends at line 1 with `exit 0` in the function `run` called at line 2.*the `torchrun` at line 3 never runs"),
    # r48-shell e10: a quoted call is the same call (bash removes the quotes before the lookup)
    ('run() {{ exit 0; }}\n"run"\n{t}\n',
     "ends at line 1 with `exit 0` in the function `run` called at line 2.*the `torchrun` at line 3 never runs"),
    # bash(1) `exit [n]`: "If n is omitted, the exit status is that of the last command executed"
    ("echo start\nexit\n{t}\n", "ends at line 2 with `exit` \\(its last command's status.*line 3 never runs"),
])
def test_a_no_run_after_an_exit_names_the_training_line_it_skips(tmp_path: Path, text: str, said: str) -> None:
    """Review r47-shell e01, e13, e21: the user's training command is silently skipped otherwise."""
    with pytest.raises(NotAPipelineRun, match=said):
        _parse(text.format(t=TRAIN), tmp_path)


@pytest.mark.parametrize("option", ['--rsync-path="mkdir -p /data && rsync"', "--rsync-path='mkdir -p /data; rsync'",
                                    '-e "ssh -p 2222 -o BatchMode=yes | cat"'])
def test_an_option_command_line_of_known_inert_commands_trains_nothing(tmp_path: Path, option: str) -> None:
    """Review r47-shell r04, r07: each command of the option's lists decides, not the `&&`."""
    with pytest.raises(NotAPipelineRun, match="`rsync`"):
        _parse(f"rsync -av {option} data/ host:/data/\n", tmp_path)


@pytest.mark.parametrize("option", ['--rsync-path="mkdir -p /data && python prep.py"',
                                    '--rsync-path="mkdir -p $D && rsync"', '--rsync-path="for d in a; do rsync; done"'])
def test_an_option_command_line_that_may_train_stays_unfollowed(tmp_path: Path, option: str) -> None:
    with pytest.raises(CommandNotFollowed, match="rsync`, whose `--rsync-path`"):
        _parse(f"rsync -av {option} data/ host:/data/\n", tmp_path)


def test_a_word_not_known_before_the_c_text_is_named(tmp_path: Path) -> None:
    """Review r47-shell c30: `bash $BASH_OPTS -c "torchrun ..."` was "a script not read here"
    (`bash $BASH_OPTS`); what is unknown is the word before `-c`, and the text it may run."""
    with pytest.raises(CommandNotFollowed, match="word `\\$BASH_OPTS` before `-c` is not known statically "
                                                 "\\(the script never sets it.*`-c` text `torchrun"):
        _parse(f'bash $BASH_OPTS -c "{TRAIN}"\n', tmp_path)


@pytest.mark.parametrize(("line", "said"), [
    ("local MODEL=gpt", "`local MODEL=gpt` returns 1 outside a function"),
    ("return 0", "`return 0` returns 2 outside a function or sourced file"),
    # r48-shell l11, l12: a brace group and a loop of known items run on the script's own list
    ("for i in 1; do local X=$i; done", "`local X=\\$i` returns 1 outside a function"),
    ("{ local X=1; }", "`local X=1` returns 1 outside a function"),
])
def test_a_function_only_builtin_at_top_level_ends_a_set_e_script(tmp_path: Path, line: str, said: str) -> None:
    """bash 5, checked: `set -e; local x=1; echo after` prints "local: can only be used in a
    function" and exits 1; `return` there exits 2 ("can only `return' from a function or sourced
    script"). Without `set -e` both go on (test below)."""
    with pytest.raises(ScriptExits, match=said):
        _parse(f"set -e\n{line}\n{TRAIN}\n", tmp_path)


def test_a_function_only_builtin_without_set_e_goes_on(tmp_path: Path) -> None:
    assert _parse(f"local MODEL=gpt\n{TRAIN}\n", tmp_path).script == "train.py"


@pytest.mark.parametrize("text", [f"if false; then {TRAIN}; fi\n", f"while false; do {TRAIN}; done\n",
                                  f"true || {TRAIN}\n"])
def test_a_branch_a_constant_builtin_rules_out_never_runs(tmp_path: Path, text: str) -> None:
    """bash(1): `false` returns 1, `true` and `:` 0, whatever their arguments: `if false; then
    torchrun ...; fi` runs no training (was read as CLEAN). NVIDIA/Megatron-LM d98e8a64dd
    examples/rl/model_configs/qwen_2p5_distill_7b.sh:13 sets its defaults under `if true; then`."""
    with pytest.raises(NotAPipelineRun):
        _parse(text, tmp_path)


@pytest.mark.parametrize("text", [
    f"true() {{ return 1; }}\nif true; then echo hi; else {TRAIN}; fi\n",
    f"false() {{ return 0; }}\nif false; then {TRAIN}; fi\n",
    f"shopt -s expand_aliases\nalias true=false\nif true; then echo hi; else {TRAIN}; fi\n",
])
def test_a_function_or_alias_named_as_a_constant_builtin_is_what_runs(tmp_path: Path, text: str) -> None:
    """Review r48-shell c10, c11: bash looks a function up before a builtin, an alias before
    both (bash 5, checked with echo stubs: `true() { return 1; }; if true; then echo T; else echo
    F; fi` prints F). The training command in the branch it takes runs."""
    assert _parse(text, tmp_path).script == "train.py"


@pytest.mark.parametrize("text", [f"run() {{ false; exit; }}\nrun\n{TRAIN}\n", f"false\nexit $?\n{TRAIN}\n"])
def test_an_exit_of_a_last_status_known_to_fail_does_not_start(tmp_path: Path, text: str) -> None:
    """Review r48-shell: bash(1) `exit` with no n exits with the last command's status; after
    `false` that is 1 (bash 5: `run() { false; exit; }; run; echo after` exits 1), as `exit 1`."""
    with pytest.raises(ScriptExits):
        _parse(text, tmp_path)
