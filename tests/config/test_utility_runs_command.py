"""A utility the rules say trains nothing, given a command to run, runs another program (review
r40-nolaunch item 2, which fixed find/tar/git/awk/trap; brief h41-bash item 4):

- GNU sed's `e` command and the `s` command's `e` flag run a command (sed(1) "e command"); a
  `-f FILE` script is not read (auditor.bash.sed_script). Alibaba/Pai-Megatron-Patch a098ca5acb
  examples' scripts edit files with `sed -i` (no `e`): still inert;
- `rsync -e CMD` / `--rsh=CMD` / `--rsync-path=PROG` start CMD (rsync(1));
- `xargs CMD` runs CMD with words read from its input appended (or, with -I, where the
  replace-str stands): `ls *.py | xargs torchrun --nproc_per_node 8` read as a torchrun with no
  script and CLEAN; its script is those words, not known here. alibaba/ROLL 8eb27cc2dc
  examples/agentic_demo/run_agentic_pipeline_sokoban_sandbox_single_node.sh:7 (`lsof -ti:8080 |
  xargs kill -9`) and Pai-Megatron-Patch a098ca5acb examples/qwen2_5/run_mcore_qwen.sh:367
  (`find ... -print0 | xargs -0 cp -t DIR`) run inert programs that way: still inert.
Before, each read NOT A PIPELINE RUN ("every command it runs is known and none can train").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.getopt import Grammar
from auditor.bash.sed_script import runs_command
from auditor.bash.values import Partial, Scalar, Symbolic
from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, parse_launch
from auditor.rulebook.launchers import Spelling

SED = Grammar.of(Spelling.load(None).option_grammar["sed"])


@pytest.mark.parametrize("line", [
    'sed -n "1e torchrun --nproc_per_node 8 train.py" cfg.txt',
    "sed 's/^/torchrun --nproc_per_node 8 /e' list.txt",
    "sed -i -e 's/a/b/' -e '$e torchrun train.py' cfg.txt",
    "sed -f edit.sed cfg.txt",
    'rsync -e "torchrun --nproc_per_node 8 train.py" a host:b',
    'rsync -a --rsh="torchrun train.py" a host:b',
    'rsync -e "$RSH" a host:b',
    'rsync --rsync-path="$REMOTE" a host:b',
    'sed -i "${LINE}e date" cfg.txt',
    'sed -i "s/a/b/${FLAGS}" cfg.txt',
    'sed -i "${SCRIPT}" cfg.txt',
])
def test_a_utility_that_runs_a_command_may_train(tmp_path: Path, line: str) -> None:
    text = f"pip install -r req.txt\n{line}\n"
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(CommandNotFollowed) as caught:
        parse_launch(text, str(tmp_path / "run.sh"))
    assert "runs another program" in str(caught.value)


@pytest.mark.parametrize("line", [
    "sed -i 's/old/new/g' cfg.txt",
    "sed -i.bak -e '/^#/d' -e 's|e|E|' cfg.txt",
    "rsync -av src/ host:dst/",
    "find -L ckpt -maxdepth 1 -type f -name '*.json' -print0 | xargs -0 cp -t out",
    "lsof -ti:8080 | xargs kill -9 2>/dev/null || true",
    # review h41 item 2: the remote shell rsync runs its own server through, and a variable
    # in the pattern or replacement of an `s` command (data, no command letter or flag) -- the
    # shape of microsoft/Megatron-DeepSpeed examples' `sed "s/CONFIG_BATCH_SIZE/${GLOBAL_BATCH_SIZE}/"`
    'rsync -avz -e "ssh -p 2222" host:/data/ ./data/',
    "rsync -avze ssh host:/data/ ./data/",
    'rsync -a --rsh="ssh -i key" --rsync-path="sudo rsync" host:/data/ ./data/',
    'sed -i "s|DATA_DIR|${DATA_DIR}|g" cfg.yaml',
    'sed -i -e "s/BS/${BS}/" -e "/^${KEY}:/d" cfg.yaml',
])
def test_a_utility_that_runs_none_stays_inert(tmp_path: Path, line: str) -> None:
    text = f"pip install -r req.txt\n{line}\n"
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(NotAPipelineRun):
        parse_launch(text, str(tmp_path / "run.sh"))


@pytest.mark.parametrize("line", [
    "ls *.py | xargs torchrun --nproc_per_node 8",
    "ls *.py | xargs -n 1 torchrun --nproc_per_node 8",
    "ls *.py | xargs -I{} torchrun --nproc_per_node 8 {} --lr 1",
    "ls *.py | xargs --replace=@ torchrun --nproc_per_node 8 @",
])
def test_what_xargs_reads_is_the_commands_words(tmp_path: Path, line: str) -> None:
    text = f"{line}\n"
    (tmp_path / "run.sh").write_text(text)
    config = parse_launch(text, str(tmp_path / "run.sh"))
    assert config.nproc_per_node == 8 and isinstance(config.script, Symbolic)
    assert "xargs" in str(config.script)


@pytest.mark.parametrize("args, runs", [
    (["-n", "/x/,/y/{e ls\n}", "f"], True),
    (["-e1e date", "f"], True),
    (["--expression=s/a/b/ge", "f"], True),
    (["-E", "s/(a)e/\\1/g", "f"], False),
    (["-i", "/^e/d", "f"], False),
    (["y/abc/xyz/", "f"], False),
    (["s/a/b/w out.txt", "f"], False),
    ([Partial("s|X|${X}|g", (("s|X|", False), ("${X}", True), ("|g", False))), "f"], False),
    ([Partial("s|X|y|${F}", (("s|X|y|", False), ("${F}", True))), "f"], True),
    ([Partial("${A}d", (("${A}", True), ("d", False))), "f"], True),
])
def test_the_sed_script_reader(args: list[Scalar], runs: bool) -> None:
    assert bool(runs_command(list(args), SED)) is runs
