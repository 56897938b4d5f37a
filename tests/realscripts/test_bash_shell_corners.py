"""Bash corners where the reader went on past a stop, or stated a value bash does not give.

Each case is also run by bash itself (the training command replaced by `echo reached`, no
launcher ever run): the reader stops exactly where bash stops.

- `( local X=1 )`, a decided `case` arm `{ local X; }`, `f() { shift 2; }; f a` under `set -e`:
  the failing command ends its subshell, its branch's list or the function, then the script.
- `: "${X:?msg}"`: bash prints msg and exits, as the guards of NVIDIA-NeMo/RL@7ea279abfbeb698b
  092856d0dab61e7cf39bc909 examples/nemo_gym/nemotron-3-super/super_launch.sh:5-14 and
  NVIDIA-NeMo/Megatron-Bridge@067f987df0 examples/models/qwen/qwen3_vl/peft_energon.sh:25 do:
  a sure stop where the script left X empty, a check of the caller's environment where X is the
  caller's (the walk goes on, X the caller's value).
- `set -- $X` of an X not known: $1 is not known after it, nor `${1:-2}`, nor after a `shift`.
- a job run with `&`, a call whose words are a glob or braces, a subshell under an ERR trap: no
  sure stop (review r49-shell's inputs).
"""

from __future__ import annotations

import subprocess

import pytest

from auditor.config.launch import ScriptExits, parse_launch

TRAIN = "torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size ${PP}\n"

STOPS = {  # name: (script before the training command, the line bash stops at; 0: it goes on)
    "subshell-local": ("set -e\nPP=2\n( local X=1 )\n", 3),
    "case-arm-group-local": ("set -e\nPP=2\nM=a\ncase $M in a) { local X; } ;; esac\n", 4),
    "if-true-local": ("set -e\nPP=2\nif true; then local X; fi\n", 3),
    "shift-past-the-end": ("set -e\nPP=2\nf() { shift 2; }\nf a\n", 4),
    "shift-within": ("set -e\nPP=2\nf() { shift 2; }\nf a b\n", 0),
    "subshell-no-set-e": ("PP=2\n( local X=1 )\n", 0),
    "case-of-the-callers": ("set -e\nPP=2\ncase ${M:-a} in b) local X ;; esac\n", 0),
    "required-empty": ("PP=2\nX=\n: \"${X:?X is required}\"\n", 3),
    "required-empty-assignment": ("X=\nPP=${X:?X is required}\n", 2),
    "required-set": ("PP=2\nX=1\n: \"${X:?X is required}\"\n", 0),
    "required-empty-unset-form": ("PP=2\nX=\n: \"${X?X is required}\"\n", 0),
    # r49-shell: a job run with `&` is no command whose status bash checks (bash(1) Lists)
    "background-subshell": ("set -e\nPP=2\n( false ) &\n", 0),
    "background-group": ("set -e\nPP=2\n{ false; } &\n", 0),
    "background-local": ("set -e\nPP=2\n( local X=1 ) &\n", 0),
    "background-monitor-wait": ("set -e\nPP=2\n( while false; do :; done; false ) &\nwait\n", 0),
    # a glob or a brace expansion may be any number of words: whether `shift 2` fails is not known
    "shift-glob": ("set -e\nPP=2\nf() { shift 2; }\nf *.cfg-none-here\n", 4),
    "shift-braces": ("set -e\nPP=2\nf() { shift 2; }\nf {a,b}\n", 0),
    # an ERR trap's `exit 0` ends the subshell with 0: the script goes on
    "shift-superscript": ("set -e\nPP=2\nf() { shift \u00b2; }\nf a\n", 4),  # str.isdigit() takes "²"
    "shift-superscript-top": ("PP=2\nset -- a b\nshift \u00b2\n", 0),
    "subshell-err-trap": ("set -e\nPP=2\n( trap \"exit 0\" ERR; false )\n", 0),
}


def _bash_stops(prefix: str) -> bool:
    proc = subprocess.run(["bash", "-c", prefix + "echo reached\n"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"}, timeout=30)
    return "reached" not in proc.stdout


@pytest.mark.parametrize("name", sorted(STOPS))
def test_the_script_stops_where_bash_stops_it(name: str) -> None:
    prefix, line = STOPS[name]
    assert _bash_stops(prefix) is bool(line)  # the case is what bash does
    if name == "shift-glob":  # no file matches here, at run time two may: the walk does not know
        line = 0
    if name == "shift-superscript":  # bash: "numeric argument required"; the walk goes on, undecided
        line = 0
    if not line:
        assert parse_launch(prefix + TRAIN, "run.sh").launcher == "torchrun pretrain_gpt.py"
        return
    with pytest.raises(ScriptExits) as stopped:
        parse_launch(prefix + TRAIN, "run.sh")
    assert f"line {line}" in stopped.value.what


def test_a_required_variable_of_the_caller_is_a_check_of_its_environment() -> None:
    prefix = "set -euo pipefail\nPP=2\n: \"${CONFIG_PATH:?CONFIG_PATH is required}\"\n"
    assert _bash_stops(prefix)  # bash stops where the caller leaves it unset
    config = parse_launch(prefix + TRAIN, "run.sh")
    assert config.launcher == "torchrun pretrain_gpt.py"


@pytest.mark.parametrize("words", ["$X", '"$X"', "$(cat args.txt)"])
def test_set_of_words_not_known_leaves_the_positional_unknown(words: str) -> None:
    flag = parse_launch(f"set -- {words}\nPP=${{1:-2}}\n" + TRAIN, "run.sh").flags["pipeline_model_parallel_size"]
    assert flag.values != ("2",) and "${1:-2}" in str(flag.value)


def test_set_of_known_words_gives_them() -> None:
    flag = parse_launch("set -- 4 $X\nPP=${1:-2}\n" + TRAIN, "run.sh").flags["pipeline_model_parallel_size"]
    assert flag.values == ("4",)


PUSHD = {  # the script before `torchrun train.py`: the folder it runs in, relative to the launch one
    "pushd": ("pushd tools\n", "tools"),
    "pushd-popd": ("pushd tools >/dev/null\npopd\n", ""),
    "pushd-twice-popd": ("pushd tools\npushd sub\npopd\n", "tools"),
    "popd-in-a-subshell": ("pushd tools\n(popd)\n", "tools"),
    "pushd-in-a-branch": ("if [ -n \"$Z\" ]; then pushd tools; fi\n", None),
    "popd-of-an-empty-stack": ("popd\n", None),
}


@pytest.mark.parametrize("name", sorted(PUSHD))
def test_pushd_and_popd_move_the_command_as_bash_does(name: str, tmp_path) -> None:
    """bigcode-project/Megatron-LM@7c325cd34a examples/pretrain_bigcode_1b.slurm:19 runs `pushd
    $SCRIPT_REPO` before its launcher: an entry relative to the pushed folder is there."""
    prefix, workdir = PUSHD[name]
    (tmp_path / "tools" / "sub").mkdir(parents=True)
    if workdir is not None:  # the case is what bash does
        proc = subprocess.run(["bash", "-c", prefix + "pwd\n"], capture_output=True, text=True, cwd=tmp_path,
                              env={"PATH": "/usr/bin:/bin"}, timeout=30)
        assert proc.stdout.strip().splitlines()[-1] == str(tmp_path / workdir).rstrip("/")
    config = parse_launch(prefix + "torchrun --nproc_per_node 8 train.py --pipeline-model-parallel-size 2\n", "run.sh")
    assert config.workdir == workdir


def test_shift_past_words_not_known_leaves_the_positional_unknown() -> None:
    """`set -- $X 4; shift`: $X may be no word or several, so $1 after the shift is not known."""
    flag = parse_launch("set -- $X 4\nshift\nPP=${1:-8}\n" + TRAIN, "run.sh").flags["pipeline_model_parallel_size"]
    assert flag.values != ("8",) and "${1:-8}" in str(flag.value)
