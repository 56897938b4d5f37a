"""A plain-PyTorch entry that records its git hash through the `sh` library is one process that
starts no rank: `sh.git.log("-1", format="%H")` runs `git log -1 --format=%H`, and
`except sh.ErrorReturnCode_128:` names sh's exception class, no program.

TRAIN_PY is written after microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
training/HelloDeepSpeed/train_bert.py, run by its run.sh as `python train_bert.py --checkpoint_dir
./experiment`: create_experiment_dir (:421-485) names the directory with
`datetime.datetime.now(pytz.timezone("US/Pacific"))` (:449), runs `sh.git.log("-1",
format="%H", _tty_out=False, _fg=False)` (:466) and `sh.git.diff(_fg=False, _tty_out=False)`
(:477) in `try` blocks that catch `sh.ErrorReturnCode_128` (:469) and `sh.ErrorReturnCode_129`
(:480), and logs with loguru (:22). The scan read the exception classes as programs started
(INCONCLUSIVE asking --command for train_bert.py:469), read the command of `sh.git.log(...)` as
`-1` and that of `sh.git.diff(...)` as nothing, and left the world unknown (pytz and loguru not
inert, the git calls programs that may start processes). sh 2.4.0 sh/__init__.py: Environment's
allowlist and rc_exc_regex (:369, :3435-3453) give the module's own names, Command.__getattribute__
(:1315-1335) bakes a subcommand, compile_args (:1580-1620) turns `k=v` into `--k=v`.
"""

from __future__ import annotations

import ast
import shlex

import pytest

from auditor.analysis import schedule_reach
from auditor.bash.values import Symbolic
from auditor.config.launch import read_launch
from auditor.config.shell_command import command_words, starts_programs
from tests.realscripts.test_one_process import _scan, _tree

TRAIN = "python train_bert.py --checkpoint_dir ./experiment\n"
TRAIN_PY = """import datetime
import pathlib

import loguru
import pytz
import sh
import torch

logger = loguru.logger


def create_experiment_dir(checkpoint_dir):
    current_time = datetime.datetime.now(pytz.timezone("US/Pacific"))
    exp_dir = pathlib.Path(checkpoint_dir) / f"bert_pretrain.{current_time.year}"
    exp_dir.mkdir(parents=True, exist_ok=False)
    try:
        gitlog = sh.git.log("-1", format="%H", _tty_out=False, _fg=False)
        with (exp_dir / "githash.log").open("w") as handle:
            handle.write(gitlog.stdout.decode("utf-8"))
    except sh.ErrorReturnCode_128:
        logger.info("Seems like the code is not running from within a git repo")
    try:
        gitdiff = sh.git.diff(_fg=False, _tty_out=False)
        with (exp_dir / "gitdiff.log").open("w") as handle:
            handle.write(gitdiff.stdout.decode("utf-8"))
    except sh.ErrorReturnCode_129:
        logger.info("Seems like the code is not running from within a git repo")
    return exp_dir


def train(checkpoint_dir="./experiment"):
    create_experiment_dir(checkpoint_dir)
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.Adam(model.parameters())
    for _ in range(10):
        loss = model(torch.randn(4, 8)).sum()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    train()
"""


@pytest.mark.parametrize("code, started", [
    # VALID: sh's own names, tested or raised, run no program
    ("import sh\ntry:\n    f()\nexcept sh.ErrorReturnCode_128:\n    pass", []),
    ("import sh\ntry:\n    f()\nexcept (sh.ErrorReturnCode_1, sh.SignalException_SIGKILL) as e:\n    pass", []),
    ("import sh\nraise sh.ErrorReturnCode_1(b'git', b'', b'')", []),
    ("import sh\nhandled = (sh.ErrorReturnCode, sh.CommandNotFound, sh.TimeoutException)", []),
    # any class tested in an `except`, as isinstance's is: no call there
    ("import subprocess\ntry:\n    f()\nexcept (subprocess.Popen, OSError):\n    pass", []),
    # INVALID: a program, called or handed on, and sh's names that start one
    ("import sh\ntry:\n    sh.torchrun('x.py')\nexcept sh.ErrorReturnCode:\n    pass", [3]),
    ("import sh\nhelper(sh.bash)", [2]),
    ("import sh\nsh.Command('/usr/bin/torchrun')('x.py')", [2]),
    ("import sh\nsh.contrib.git('log')", [2]),
    ("import sh\nsh.RunningCommand(cmd, call_args, None, None, None)", [2]),
    ("from sh import git\ngit.log('-1')", [2]),
], ids=["except", "except-tuple", "raise", "tuple-value", "except-popen", "torchrun", "handed-on",
        "command", "contrib", "running-command", "from-import"])
def test_only_a_program_of_sh_starts_one(code: str, started: list[int]) -> None:
    assert [getattr(s.node, "lineno", 0) for s in starts_programs(ast.parse(code))] == started


@pytest.mark.parametrize("code, words, line", [
    ('import sh\nsh.git.log("-1", format="%H", _tty_out=False, _fg=False)',
     ("git", "log", "-1", "--format=%H"), "git log -1 --format=%H"),
    ("import sh\nsh.git.diff(_fg=False, _tty_out=False)", ("git", "diff"), "git diff"),
    ("from sh import git\ngit.diff_(name_only=True)", ("git", "diff", "--name-only"), "git diff --name-only"),
    ('import sh\nsh.torchrun("--nproc_per_node", 8, "x.py", n="2")',
     ("torchrun", "--nproc_per_node", "8", "x.py", "-n", "2"), "torchrun --nproc_per_node 8 x.py -n 2"),
    # a word computed at run time ends what is known: it is one argument, no shell reads it
    ('import sh\nsh.torchrun("--nproc_per_node", n, "x.py")', ("torchrun", "--nproc_per_node"), ""),
    ('import sh\nsh.git.log("-1", **kw)', ("git", "log", "-1"), ""),
    ('import sh\nsh.Command("torchrun")("x.py")', (), ""),
], ids=["log", "diff", "from-import", "torchrun", "computed", "kwargs", "command"])
def test_an_sh_call_runs_its_attribute_as_the_program(code: str, words: tuple[str, ...], line: str) -> None:
    tree = ast.parse(code)
    [start] = starts_programs(tree)
    command = command_words(start.node, tree)
    assert (command.words, command.line, command.argv) == (words, line, bool(words))


def test_a_trainer_recording_its_git_hash_is_one_process(capsys, tmp_path, monkeypatch):
    script = _tree(tmp_path, monkeypatch, TRAIN, {"train_bert.py": TRAIN_PY})
    config = read_launch(script)
    assert (config.nproc_per_node, config.nnodes) == (1, 1), config.world_source
    code, doc = _scan(capsys, script)
    headline = doc["verdict"]["headline"]
    assert "ErrorReturnCode" not in headline and "--command" not in headline, headline
    assert not any(f["kind"] == "entry.runs-command" for f in doc["findings"]), headline


@pytest.mark.parametrize("call", [
    'sh.torchrun("--nproc_per_node", "8", "pretrain_gpt.py")',  # a launcher
    'sh.git.log("-1", format=fmt)',  # a word computed at run time: not read whole
    'sh.python("x.py")',  # a Python script, not read here
    'sh.bash("-c", "torchrun x.py")',
    'sh.git.log("-1", _env=env)',  # not sh's own option only: `env=` of the runner rules
    # a program the rules do not mark as starting no rank, whatever its words
    'sh.accelerate("launch", "--num_processes", 8, "-m", "trainer.main")',
    'sh.composer("-n", 8, "train")',
    'sh.git.commit("-m", "x")',  # githooks(5): pre-commit, post-commit run any program
    'sh.git("-c", "alias.l=!torchrun x.py", "l")',  # an option before the subcommand
], ids=["torchrun", "computed", "python", "bash-c", "env", "accelerate", "composer", "git-commit", "git-alias"])
def test_a_program_that_may_start_ranks_leaves_the_world_unknown(tmp_path, monkeypatch, call):
    runs = TRAIN_PY.replace('sh.git.diff(_fg=False, _tty_out=False)', call)
    config = read_launch(_tree(tmp_path, monkeypatch, TRAIN, {"train_bert.py": runs}))
    assert isinstance(config.nproc_per_node, Symbolic), call


@pytest.mark.parametrize("words, library, may", [
    (("accelerate", "launch", "--num_processes", "8", "-m", "trainer.main"), True, True),
    (("composer", "-n", "8", "train"), True, True),
    (("git", "commit", "-m", "x"), True, True),
    (("git", "log", "-1", "--format=%H"), True, False),
    (("mkdir", "-p", "out"), True, False),
    # a command runner's literal command keeps the walk's reading (config.command_ranks may_launch)
    (("make", "docs"), False, False),
])
def test_a_command_library_call_beside_training_starts_no_rank_only_where_the_rules_say(words, library, may):
    """`sh.accelerate("launch", ...)` beside an entry that trains itself names its program by
    attribute: one the rules do not mark as starting no rank may start ranks (analysis.schedule_reach)."""
    command = ("train.py", 8, "`sh.X(...)`", words, shlex.join(words), True, library)
    assert schedule_reach._may_start(command, lambda script, depth: False) is may
