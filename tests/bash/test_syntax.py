"""`bash -n` decides whether a script runs as written (auditor/bash/syntax.py): the line and
message bash gives, or None where bash accepts it. The oracle is the bash on PATH."""

from __future__ import annotations

import shutil

import pytest

from auditor.bash.syntax import bash_rejects

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on PATH to ask")


def test_a_script_bash_accepts() -> None:
    assert bash_rejects("export NCCL_DEBUG=INFO\ntorchrun --nproc_per_node 8 train.py \\\n  --pp 2\n") is None


def test_an_unclosed_if_is_named_at_the_end() -> None:
    line, message = bash_rejects("if true; then\n  torchrun train.py\n")
    assert line == 3 and "syntax error" in message


def test_an_unclosed_arithmetic_is_named_at_its_line() -> None:
    line, message = bash_rejects("PP=$((1+\n")
    assert line == 1 and "matching `)'" in message
