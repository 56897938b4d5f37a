"""One reading of a script's main block for every reader (config/entry_script.is_main_guard):
`if __name__ == "__main__":` either way round runs when the launcher runs the file and not when
it is imported; `if __name__ != "__main__":` is the other way round. Two of the three readers
this replaced did not look at the operator, so a `!=` block read as the program's own code (the
entry's settings certain) and an imported module's `!=` block, which runs on import, was dropped
(its training loop unseen). The main block as Megatron-LM writes it
(NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553 pretrain_gpt.py, last lines)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor.config.entry_script import is_main_guard
from auditor.config.no_training import _imported_code
from auditor.config.pyenv import settings


@pytest.mark.parametrize("test, guard", [
    ('__name__ == "__main__"', True),
    ("'__main__' == __name__", True),
    ('__name__ != "__main__"', False),
    ('__name__ == "main"', False),
    ('__name__ is "__main__"', False),
    ('__name__ == "__main__" == x', False),
])
def test_only_an_equality_with_main_is_the_main_block(test, guard):
    assert is_main_guard(ast.parse(f"if {test}:\n    pass\n").body[0]) is guard


ENTRY = '''\
import os
if __name__ != "__main__":
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
if __name__ == "__main__":
    os.environ["NCCL_DEBUG"] = "INFO"
import torch
'''


def test_an_entrys_not_main_block_is_not_its_own_code():
    by_name = {s.name: s for s in settings(ENTRY)}
    assert by_name["NCCL_DEBUG"].nested is False  # the main block runs
    assert by_name["TORCH_DISTRIBUTED_DEBUG"].nested is True  # runs only on import: not known here


def test_an_imported_modules_not_main_block_is_kept_its_main_block_dropped(tmp_path: Path):
    entry = tmp_path / "run.py"
    helper = tmp_path / "helper.py"
    trees = [(entry, ast.parse("import helper\n")),
             (helper, ast.parse('if __name__ != "__main__":\n    train()\n'
                                'if __name__ == "__main__":\n    evaluate()\n'))]
    kept = ast.unparse(_imported_code(trees, entry)[1])
    assert "train()" in kept and "evaluate()" not in kept
