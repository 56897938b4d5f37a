"""The words xargs reads, where the script writes them out (review r43-scan-shell x1/x3/x5): `echo
3 | xargs -I{} torchrun ... --pipeline-model-parallel-size {}` runs PP 3 of 8 ranks (it does not
start), as does `echo --pipeline-model-parallel-size 3 | xargs torchrun ...` and `xargs -a FILE`
of a file the script wrote; main read them as one unknown word and judged PP at 1, 2 and 4,
CLEAN. Where the input is not known (`cat`, a file not written here) the word stays unknown.
bash.walk `_piped` (bash.written `output`: echo's options are -n/-e/-E alone) and
config.input_words `through_input`; each shape checked against GNU xargs first.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from auditor.config.launch import parse_launch

RUN = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 1024 "
       "--num-attention-heads 16 --micro-batch-size 1 --global-batch-size 48 --seq-length 1024 "
       "--max-position-embeddings 1024")


def _bash(line: str, cwd: Path) -> str:
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, check=False, cwd=cwd).stdout


@pytest.mark.parametrize("line", [
    "echo 3 | xargs -I{} CMD --pipeline-model-parallel-size {}",
    "echo --pipeline-model-parallel-size 3 | xargs CMD",
    "printf '%s\\n' '--pipeline-model-parallel-size 3' | xargs CMD",
    "echo --pipeline-model-parallel-size 3 > args.txt\nxargs -a args.txt CMD",
])
def test_words_the_script_pipes_to_xargs_are_read(tmp_path: Path, line: str) -> None:
    assert _bash(line.replace("CMD", "echo RUN"), tmp_path).split()[-2:] == ["--pipeline-model-parallel-size", "3"]
    text = "#!/bin/bash\n" + line.replace("CMD", RUN) + "\n"
    config = parse_launch(text, str(tmp_path / "run.sh"), environ={})
    assert config.flags["pipeline_model_parallel_size"].value == "3"
    assert not [d for d in config.diagnostics if d.kind == "launch.unresolved-args"]


@pytest.mark.parametrize("line", [
    "cat args.txt | xargs CMD",
    "xargs -a /elsewhere/args.txt CMD",
    "echo 3 4 | xargs -n1 -I{} CMD --pipeline-model-parallel-size {}",
])
def test_words_not_known_here_stay_unknown(tmp_path: Path, line: str) -> None:
    text = "#!/bin/bash\n" + line.replace("CMD", RUN) + "\n"
    config = parse_launch(text, str(tmp_path / "run.sh"), environ={})
    if "{}" in line:  # `-n1` batches the words: each line a run of its own, its PP not known
        assert "the words xargs reads" in str(config.flags["pipeline_model_parallel_size"].value)
        return
    said = [d for d in config.diagnostics if d.kind == "launch.unresolved-args"]
    assert said and "the words xargs reads from its input" in said[0].message


@pytest.mark.parametrize("line, pp", [
    # review r44-scan x01: the command's own `<` wins over the pipe (bash applies it after)
    ("echo 4 > pp.txt\necho 3 | xargs -I{} CMD --pipeline-model-parallel-size {} < pp.txt", "4"),
    ("echo 3 | xargs CMD --pipeline-model-parallel-size <<< 4", "4"),
    # x05/x06: -r and -t neither split nor batch the words
    ("echo --pipeline-model-parallel-size 3 | xargs -r CMD", "3"),
    ("echo '--pipeline-model-parallel-size 3' | xargs -t CMD", "3"),
    ("echo 3 | xargs --no-run-if-empty --verbose CMD --pipeline-model-parallel-size", "3"),
    ("echo 3 | xargs -n 1 CMD --pipeline-model-parallel-size", "3"),  # one word, one command
])
def test_the_words_xargs_runs_with(tmp_path: Path, line: str, pp: str) -> None:
    ran = _bash(line.replace("CMD", "echo RUN"), tmp_path).split()
    assert ran[-2:] == ["--pipeline-model-parallel-size", pp], ran
    config = parse_launch("#!/bin/bash\n" + line.replace("CMD", RUN) + "\n", str(tmp_path / "run.sh"), environ={})
    assert config.flags["pipeline_model_parallel_size"].value == pp


@pytest.mark.parametrize("line", [
    "echo 3 | xargs CMD --pipeline-model-parallel-size < /elsewhere/pp.txt",  # a file not written here
    "echo 3 4 | xargs -n 1 CMD --pipeline-model-parallel-size",  # x08: two commands, PP 3 and PP 4
])
def test_words_of_an_input_not_known_or_of_several_commands_stay_unknown(tmp_path: Path, line: str) -> None:
    config = parse_launch("#!/bin/bash\n" + line.replace("CMD", RUN) + "\n", str(tmp_path / "run.sh"), environ={})
    value = str(config.flags["pipeline_model_parallel_size"].value)
    assert "the words xargs reads" in value, value
