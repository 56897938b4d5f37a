"""A script bash itself rejects is an error naming its line, not a silent misparse (issue 22 item 4).

Oracle: `bash -n` on the same text. The shapes are the slips found in launch scripts: an `if` whose
`fi` was lost when a block was deleted, a `case` without `esac`, a stray `)` after a command (as in a
Megatron-LM recipe edited by hand from examples/gpt3/train_gpt3_175b_distributed.sh, NVIDIA/Megatron-LM
commit d98e8a64ddf34856e74b24714e3bedb2f5a39553).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from auditor.config.launch import parse_launch
from auditor.errors import InputError

BASH = shutil.which("bash")
CMD = "torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4"

REJECTED = {
    "if without fi": (f"MODE=pp\nif [ $MODE = pp ]; then\n  {CMD}\n", 2),
    "case without esac": (f"case $M in\n  a) {CMD} ;;\n", 1),
    "stray paren": (f"{CMD} )\necho done\n", 1),
    "done without do": (f"{CMD}\ndone\n", 2),
}


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize("name", sorted(REJECTED))
def test_what_bash_rejects_is_an_error_with_its_line(name: str) -> None:
    text, line = REJECTED[name]
    assert subprocess.run([BASH, "-n"], input=text.encode(), capture_output=True, check=False).returncode != 0
    with pytest.raises(InputError) as caught:
        parse_launch(text, "bad.sh")
    assert "bash rejects the script" in caught.value.cause
    assert caught.value.line == line


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_what_bash_accepts_is_read() -> None:
    text = f"if [ x ]; then\n  {CMD}\nfi\n"
    assert subprocess.run([BASH, "-n"], input=text.encode(), capture_output=True, check=False).returncode == 0
    assert parse_launch(text, "good.sh").flags["pipeline_model_parallel_size"].value == "4"
