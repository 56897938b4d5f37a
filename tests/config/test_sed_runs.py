"""What a sed command runs, read as GNU sed reads its words and script (review h42 item 4;
bash.sed_script, bash.getopt), each shape run through GNU sed itself first. Before:

- `sed -ne '1e CMD' -e 's/a/b/' f`: `-ne` was skipped as one unknown option, its script taken for
  an operand and dropped beside the `-e` one: read as running nothing (NOT A PIPELINE RUN);
- `sed -nf edit.sed f`: the script file was read as the script's text: nothing;
- `sed --sandbox 's/^/CMD /e'` (sed refuses the script: "e/r/w commands disabled in sandbox mode")
  and `sed 's/a/b/we' f` (the `w` flag writes the file `e`) were read as running a command;
- `sed '1e date' f` runs `date`, which trains nothing: it was read as running some program.
`sed 's/x/ls/e'` runs the line of its input that the `s` changed (the pattern space), not `ls`:
what runs is the input's text, not known, and the reason says so.
NVIDIA/Megatron-LM d98e8a64dd .github/scripts/test_cache_keys.sh:22 (`sed -nE
's#.*pr-([0-9]+)-.*#\\1#p'`) bundles its flags so, and runs nothing.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, parse_launch


def _sed_runs(words: str, tmp_path: Path) -> bool:
    """Whether GNU sed, given `words` with CMD a command that leaves a mark, runs it."""
    mark = tmp_path / "ran"
    (tmp_path / "f").write_text("a\nx\n")
    (tmp_path / "edit.sed").write_text(f"1e touch {mark}\n")
    line = words.replace("CMD", f"touch {mark}").replace("edit.sed", str(tmp_path / "edit.sed"))
    subprocess.run(["bash", "-c", f"cd {shlex.quote(str(tmp_path))} && echo 'touch {mark}' | sed {line}"],
                   capture_output=True, text=True, check=False)
    return mark.exists()


@pytest.mark.parametrize("words, runs", [
    ("-ne '1e CMD' -e 's/a/b/' f", True),
    ("-n -e 's/a/b/' --expr='1e CMD' f", True),
    ("-nf edit.sed f", True),
    ("-E -e 's|^|CMD # |e' f", True),
    ("--sandbox 's|^|CMD # |e' f", False),
    ("--posix '1e CMD' f", False),
    ("'s/a/b/we' f", False),
    ("-nE 's#.*pr-([0-9]+)-.*#\\1#p' f", False),
    ("-ie 's/a/b/' f", False),
])
def test_what_sed_runs(tmp_path: Path, words: str, runs: bool) -> None:
    assert _sed_runs(words, tmp_path) is runs
    text = f"pip install -r req.txt\nsed {words.replace('CMD', 'torchrun --nproc_per_node 8 train.py')}\n"
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(CommandNotFollowed if runs else NotAPipelineRun) as caught:
        parse_launch(text, str(tmp_path / "run.sh"))
    assert not runs or "runs another program" in str(caught.value)


def test_an_e_command_that_trains_nothing_is_inert(tmp_path: Path) -> None:
    text = "pip install -r req.txt\nsed -i '1e date' f\n"
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(NotAPipelineRun):
        parse_launch(text, str(tmp_path / "run.sh"))


def test_the_s_e_flag_runs_the_line_it_changed(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x\n")
    done = subprocess.run(["sed", "s/x/echo RAN/e", str(tmp_path / "f")], capture_output=True, text=True, check=False)
    assert done.stdout == "RAN\n"  # the changed line, `echo RAN`, ran; not the replacement alone
    text = "pip install -r req.txt\nsed 's/x/ls/e' f\n"
    (tmp_path / "run.sh").write_text(text)
    with pytest.raises(CommandNotFollowed) as caught:
        parse_launch(text, str(tmp_path / "run.sh"))
    assert "`e` flag" in str(caught.value) and "each line it changes" in str(caught.value)
