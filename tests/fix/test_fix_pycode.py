"""The Python side of `fix`: a libcst codemod of the statements that set TORCH_DISTRIBUTED_DEBUG
from Python keeps every byte outside the statement it edits (comments, blank lines, odd
spacing, the other variables' lines)."""

from __future__ import annotations

import difflib

import pytest

from auditor.errors import InputError
from auditor.fix import edits
from auditor.fix.pycode import env_codemod

# As huangrt01/CS-Notes 81f4738680db541a2f7a5120fd843592385e2263
# Notes/snippets/pytorch-debugging.py sets it: in `__main__`, beside other variables written
# with and without spaces around `=`, before mp.spawn; plus setdefault and putenv forms and
# comments around them.
TRAINER = '''\
import os  # the environment before init
import torch.distributed as dist
from os import environ


def worker(rank):
    dist.init_process_group("nccl", rank=rank, world_size=2)


def debug():
    # very useful when a rank hangs
    os.environ.setdefault('TORCH_DISTRIBUTED_DEBUG', 'DETAIL')


if __name__ == "__main__":
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["TORCH_CPP_LOG_LEVEL"]="INFO"
    # DETAIL: every collective checked
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"   # remove after the hang
    os.putenv("TORCH_DISTRIBUTED_DEBUG",  "DETAIL")
    environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    import torch.multiprocessing as mp
    mp.spawn(worker, nprocs=2, args=())
'''


def _ops(old: str, new: str) -> list[tuple[str, list[str], list[str]]]:
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    return [(tag, a[i1:i2], b[j1:j2])
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes()
            if tag != "equal"]


def test_removing_keeps_every_other_byte_and_the_comment_above():
    new, n = env_codemod(TRAINER, "TORCH_DISTRIBUTED_DEBUG", "unset_env")
    assert n == 4
    # The function left without a statement gets `pass` under its comment; elsewhere the
    # statements' lines go and nothing else changes.
    assert _ops(TRAINER, new) == [
        ("replace", ["    os.environ.setdefault('TORCH_DISTRIBUTED_DEBUG', 'DETAIL')\n"],
         ["    pass\n"]),
        ("delete", ['    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"   # remove after the hang\n',
                    '    os.putenv("TORCH_DISTRIBUTED_DEBUG",  "DETAIL")\n',
                    '    environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"\n'], []),
    ]
    assert "    # DETAIL: every collective checked\n    import torch.multiprocessing" in new
    compile(new, "trainer.py", "exec")


def test_changing_the_value_touches_only_the_literal():
    new, n = env_codemod(TRAINER, "TORCH_DISTRIBUTED_DEBUG", "set_env", "INFO")
    assert n == 4
    [edit] = edits.between("trainer.py", TRAINER, new)  # one span, from the first to the last
    assert TRAINER.replace("DETAIL')", "INFO')").replace('"DETAIL"', '"INFO"') == new
    assert edits.apply(TRAINER, [edit]) == new
    assert "# DETAIL: every collective checked" in new  # comments are no literal


def test_renaming_keeps_the_quotes():
    new, n = env_codemod(TRAINER, "TORCH_CPP_LOG_LEVEL", "rename_env", "TORCH_LOGS_LEVEL")
    assert n == 1
    assert _ops(TRAINER, new) == [("replace", ['    os.environ["TORCH_CPP_LOG_LEVEL"]="INFO"\n'],
                                   ['    os.environ["TORCH_LOGS_LEVEL"]="INFO"\n'])]


def test_a_value_that_is_no_literal_is_not_guessed():
    source = 'import os\nos.environ["TORCH_DISTRIBUTED_DEBUG"] = level\n'
    with pytest.raises(InputError, match="no string literal"):
        env_codemod(source, "TORCH_DISTRIBUTED_DEBUG", "set_env", "INFO")
    assert env_codemod(source, "TORCH_DISTRIBUTED_DEBUG", "unset_env") == ("import os\n", 1)
