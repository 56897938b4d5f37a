"""config.command_ranks: whether a command a Python entry runs may be another run of ranks.

The cases are the command lines real entries run: DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
training/HelloDeepSpeed/train_bert.py:477 (`sh.git.log("-1", format="%H")`), Megatron-DeepSpeed@f4157bea69
pretrain_gpt.py:331-347 (`git rev-parse` beside its training), and the launchers a command may hide
(`accelerate launch`, `torchrun`, `bash -c "torchrun ..."`).
"""

from __future__ import annotations

import pytest

from auditor.config.command_ranks import ScriptMay, may_launch, starts_no_rank


def _any_script(script: tuple[str, ...], depth: int) -> bool:
    return True


def _no_script(script: tuple[str, ...], depth: int) -> bool:
    return False


# VALID: surely no rank (a program the rules mark inert, a read-only git subcommand)
NO_RANK = [
    ("git", "log", "-1", "--format=%H"),
    ("git", "rev-parse", "HEAD"),
    ("mkdir", "-p", "out"),
    ("cp", "a.json", "b.json"),
]
# INVALID: may start ranks, or not known to start none
MAY = [
    ("git", "commit", "-m", "x"),           # runs the checkout's hooks
    ("git", "-c", "alias.x=!torchrun", "x"),  # the subcommand is not right after git
    ("accelerate", "launch", "--num_processes", "8", "-m", "trainer.main"),
    ("composer", "-n", "8", "train"),
    ("torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"),
    ("bash", "-c", "torchrun pretrain_gpt.py"),
    ("cp", "a", "b", "torchrun"),            # a word naming a launcher
    (),
]


@pytest.mark.parametrize("words", NO_RANK, ids=" ".join)
def test_a_command_the_rules_mark_inert_starts_no_rank(words: tuple[str, ...]) -> None:
    assert starts_no_rank(words)


@pytest.mark.parametrize("words", MAY, ids=lambda w: " ".join(w) or "empty")
def test_any_other_command_is_not_known_to_start_none(words: tuple[str, ...]) -> None:
    assert not starts_no_rank(words)


@pytest.mark.parametrize("words, script_may, expected", [
    (("torchrun", "pretrain_gpt.py"), _no_script, True),
    (("bash", "-c", "echo hi"), _any_script, False),
    (("bash", "-c", "echo hi; torchrun x.py"), _no_script, True),
    (("bash", "run.sh"), _no_script, True),                  # a script the shell runs is not read
    (("python", "-W", "ignore", "tools/prep.py"), _no_script, False),
    (("python", "-W", "ignore", "tools/prep.py"), _any_script, True),
    (("python", "-m", "torch.distributed.run", "x.py"), _no_script, True),
    (("env", "A=1", "timeout", "3600", "torchrun", "x.py"), _no_script, True),
    (("$LAUNCHER", "x.py"), _no_script, True),               # a computed program may be anything
    (("tensorboard", "--logdir", "runs"), _no_script, False),
])
def test_may_launch_reads_the_words_as_the_launch_script_s_own(
        words: tuple[str, ...], script_may: ScriptMay, expected: bool) -> None:
    assert may_launch(words, script_may) is expected
