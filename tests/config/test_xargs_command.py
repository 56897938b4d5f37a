"""xargs's command is the words after its own options, run with the words it reads from its input
(review h42 items 2 and 3; config.input_words). Before:

- `... | xargs -L 1 srun -N 1`, `xargs env A=1`, `xargs nohup`: a wrapper with no program of its
  own read as running none, NOT A PIPELINE RUN; the input's first word is its program;
- `xargs -n1 numactl -i all torchrun ...`: numactl's `-i` was taken as xargs's replace option, and
  the words xargs appends were dropped from torchrun's arguments;
- `xargs -I{} srun -N 1 bash job.sh {}`: job.sh's `"$@"` read the literal `{}`, a false DOES NOT
  START (`{}` follows `--pipeline-model-parallel-size 4`);
- `xargs -I {} cp {} out/` read `{}` as the program, not followed (INCONCLUSIVE) where it runs cp:
  the shape of NVIDIA/Megatron-LM d98e8a64dd tests/functional_tests/shell_test_utils/
  run_batch_ci_tests.sh:38 (`... | xargs -I {} echo "  {}"`). alibaba/ROLL 8eb27cc2dc
  examples/agentic_demo/run_agentic_pipeline_sokoban_sandbox_single_node.sh:7 (`lsof -ti:8080 |
  xargs kill -9`) stays inert.
Each shape is checked against GNU xargs itself first.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from auditor.bash.values import Field
from auditor.config.input_words import through_input
from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, parse_launch
from auditor.rulebook.launchers import Spelling

RUN = ("--nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 1024 --num-attention-heads 16 "
       "--micro-batch-size 1 --global-batch-size 8 --seq-length 1024 --max-position-embeddings 1024 "
       "--pipeline-model-parallel-size 4")


def _xargs(line: str, given: str) -> str:
    """What bash and GNU xargs print for `line`, its input `given`."""
    return subprocess.run(["bash", "-c", line], input=given, capture_output=True, text=True, check=False).stdout


@pytest.mark.parametrize("line", [
    "cat hosts | xargs -L 1 srun -N 1",
    "cat cmds | xargs env A=1",
    "cat cmds | xargs nohup",
    "cat cmds | xargs -n 1 -P 4 timeout 3600",
])
def test_a_wrapper_with_no_program_runs_the_words_xargs_reads(tmp_path: Path, line: str) -> None:
    assert _xargs("xargs env A=1", "echo RAN\n").strip() == "RAN"  # the input names the program
    text = f"pip install -r req.txt\n{line}\n"
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(CommandNotFollowed) as caught:
        parse_launch(text, str(tmp_path / "run.sh"))
    assert "the words xargs reads from its input" in str(caught.value)


def test_the_options_after_xargss_command_are_the_commands(tmp_path: Path) -> None:
    assert _xargs("xargs -n1 echo -i all", "W\n").strip() == "-i all W"  # `-i` is the command's
    text = f"cat ports | xargs -n1 numactl -i all torchrun {RUN}\n"
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))
    assert config.nproc_per_node == 8 and config.script == "pretrain_gpt.py"
    open_words = [d for d in config.diagnostics if d.kind == "launch.unresolved-args"]
    assert open_words and "xargs" in open_words[0].message


def test_the_words_xargs_replaces_reach_a_script_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _xargs("xargs -I{} bash -c 'echo \"$@\"' job {}", "a b\n").strip() == "a b"
    monkeypatch.chdir(tmp_path)  # the launch directory, where `bash job.sh` opens job.sh
    (tmp_path / "job.sh").write_text(f'#!/bin/bash\ntorchrun {RUN} "$@"\n')
    text = "cat ports | xargs -I{} srun -N 1 bash job.sh {}\n"
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    assert not [d for d in config.diagnostics if d.kind == "launch.extra-argument"]
    assert any("xargs" in d.message for d in config.diagnostics if d.kind == "launch.unresolved-args")


@pytest.mark.parametrize("line", [
    "ls -d test_cases/*/ | xargs -I {} echo \"  {}\"",
    "ls ckpt | xargs -I {} cp {} out/",
    "lsof -ti:8080 | xargs kill -9 2>/dev/null || true",
    "find ckpt -name '*.json' -print0 | xargs -0 -P 2 cp -t out",
    "cat pids | xargs",
])
def test_an_inert_program_xargs_runs_stays_inert(tmp_path: Path, line: str) -> None:
    assert _xargs("xargs -I {} echo '  {}'", "x\n") == "  x\n"
    text = f"pip install -r req.txt\n{line}\n"
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(NotAPipelineRun):
        parse_launch(text, str(tmp_path / "run.sh"))


def test_the_words_xargs_replaces_in_a_shells_script_stay_unknown(tmp_path: Path) -> None:
    """`xargs -I{} bash -c "torchrun ... --lr {}"`: the `-c` script is read again with the words in
    it; `--lr` was the literal `{}` before, then the unknown word's own text."""
    assert _xargs('xargs -I{} bash -c "echo --lr {}"', "0.1\n").strip() == "--lr 0.1"
    text = f'cat lrs | xargs -I{{}} bash -c "torchrun {RUN} --lr {{}}"\n'
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))
    assert config.flags["pipeline_model_parallel_size"].value == "4"
    assert not isinstance(config.flags["lr"].value, str) and "xargs" in str(config.flags["lr"].value)


@pytest.mark.parametrize("words, command", [
    ("xargs -n1 numactl -i all python x.py", ["numactl", "-i", "all", "python", "x.py", "$"]),
    ("nohup xargs -I{} cp {} --to={}/x", ["cp", "$", "--to=$/x"]),
    ("xargs -0", ["echo", "$"]),
    ("env A=1 python x.py", None),  # no xargs: as it was
])
def test_xargs_as_it_runs(words: str, command: list[str] | None) -> None:
    fields = [Field(w, 1) for w in words.split()]
    got = through_input(fields, Spelling.load(None))
    if command is None:
        assert got == fields
        return
    at = next(k for k, f in enumerate(got) if f.value == "xargs")
    shown = [str(f.value).replace("$(the words xargs reads from its input)", "$") for f in got[at + 1:]]
    assert shown == command
