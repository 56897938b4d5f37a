"""auditor.bash against bash itself: each snippet runs under the real bash with a stub `rec` on
PATH that records its argv; walking the same text (lexer, parser, walk) must hand `external` the
same arguments for every `rec` it runs, without running anything. The snippets are the shapes a
front end gets wrong: leading redirects, quoting, arrays, defaults, heredocs."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from auditor.bash.lexer import Lexer
from auditor.bash.parser import Cmd, Node, ShellParser
from auditor.bash.values import EnvVar, Field
from auditor.bash.walk import Shell
from auditor.findings import Finding

BASH = shutil.which("bash")

SNIPPETS = {
    "leading redirects": ">/dev/null 2>&1 rec a b\n2>/dev/null rec c\n",
    "redirect between words": "rec a >/dev/null b 2>&1\n",
    "redirect alone, then a command": ">/dev/null\nrec x\n",
    "ansi-c and locale quotes": "rec $'a\\tb' $\"c d\" 'e'\"f\"\n",
    "escapes outside and inside quotes": 'rec a\\ b "x\\$y\\z" \\"q\\"\n',
    # `[ -z "${N:-}" ] && N=4` is bash's spelling of `N=${N:-4}` (bash.walk `_default_set`)
    "defaults and a test": '[ -z "${N:-}" ] && N=4\nrec "${N}" ${M:-8} ${M:=9} "$M"\n',
    "arrays": 'A=(x "y z" # note\n  w)\nA+=(v)\nrec "${A[@]}" ${#A[@]} "${A[1]}"\n',
    "functions and groups": 'f() { G=1; }\nf\n{ H=2; }\n( H=3 )\nrec "$G" "$H"\n',
    "heredoc skipped": "cat >/dev/null <<EOF\nrec not-run\nEOF\nrec after\n",
    "arithmetic": "P=4\nrec $((P * 2)) $(( (P + 1) % 3 ))\n",
    "appending": 'S=a\nS+=b\nrec "$S"\n',
    "newlines inside [[ ]]": '[[\n  rec = a ]] || rec b\n[[ -n x &&\n   -n y ]] && rec c\nrec d\n',
    # Pai-Megatron-Patch (alibaba/Pai-Megatron-Patch@a098ca5acbdeaf7172ce0393fa309b39a77506db,
    # examples/baichuan/run_finetune_megatron_baichuan.sh): run_cmd="torchrun ... ${opts}"; eval ${run_cmd}
    "eval of an assembled command": ('O="--a 1  --b 2"\nC="rec $O\n x"\neval ${C}\neval "$C" y\n'
                                     'Q=\'rec "a b" c\\ d $O\'\neval "$Q"\nE="rec"\n$E $O\n'),
    # the same script's `if [ $ENV = dsw ]; then ... elif [ $ENV = dlc ]` and its `case`-free
    # model-size chain; ms-swift/Megatron-LM recipes use `case $MODEL in 7B) ...`
    "if and case on literals": ('M=7B\nE=dsw\ncase $M in\n 13B|7B) rec seven ;;\n *) rec other ;;\nesac\n'
                                'case "$E" in d\'*\') rec no ;; d[a-z]*) rec glob ;; esac\n'
                                'if [ $E = dlc ]; then rec a; elif [[ $E == d* ]]; then rec b; else rec c; fi\n'
                                '! [ -z "$E" ] && rec d\n[ 3 -gt 10 ] || rec e\ntest -n "" && rec f\n'
                                'if [ "$M" != 7B ]; then P=1; else P=4; fi\nrec $P\n'),
    # THUDM/slime@624b824a89 scripts/run-qwen3-235B-A22B.sh: `--sglang-cuda-graph-bs 1 2 4 8 $(seq 16 8 256)`
    "seq on integer literals": 'rec 1 8 $(seq 16 8 40) $(seq 3) $(seq 5 -2 1) $(seq 3 1)x\n',
}


class _Recorder(Shell):
    """Keeps the arguments of every `rec` the walk reaches."""

    def __init__(self, path: str = "snippet.sh") -> None:
        super().__init__(path, {}, [])
        self.calls: list[list[object]] = []

    def external(self, fields: list[Field], inline: dict[str, EnvVar], cmd: Cmd,
                 siblings: list[Node], at: int) -> int:
        if fields[0].value == "rec":
            self.calls.append([f.value for f in fields[1:]])
        return 0


def _walk(text: str, path: str = "snippet.sh") -> tuple[list[list[object]], list[Finding]]:
    diagnostics: list[Finding] = []
    nodes = ShellParser(Lexer(text, path).tokens(), path, diagnostics).parse()
    shell = _Recorder(path)
    shell.run(nodes)
    return shell.calls, diagnostics


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_walk_agrees_with_bash(name: str, tmp_path: Path) -> None:
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "rec").write_text('#!/bin/bash\nprintf \'%s\\0\' "$@" >> "$REC_OUT"\nprintf \'\\n\' >> "$REC_OUT"\n')
    (stubs / "rec").chmod(stat.S_IRWXU)
    out = tmp_path / "calls"
    out.write_text("")
    script = tmp_path / "snippet.sh"
    script.write_text(SNIPPETS[name])
    subprocess.run([BASH, str(script)], env={"PATH": f"{stubs}:/usr/bin:/bin", "REC_OUT": str(out)},
                   cwd=tmp_path, check=True, timeout=30)
    expected = [line.split("\0")[:-1] for line in out.read_text().split("\n")[:-1]]
    calls, diagnostics = _walk(SNIPPETS[name])
    assert calls == expected
    assert diagnostics == []


# Files a snippet sources, beside it: `source env.sh` is part of the launch (verl's and Megatron-LM's
# sc21 scripts source their settings, see tests/realscripts/test_bash_unseen.py).
SOURCED = {
    "source a settings file": ("P=4\nsource ./env.sh\n. env.sh x\nrec $P $Q \"$OPTS\"\n",
                               {"env.sh": 'Q=${Q:-1}\nP=$((P * 2))\nOPTS="--a $P"\n'}),
}


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize("name", sorted(SOURCED))
def test_sourcing_agrees_with_bash(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, files = SOURCED[name]
    for file, body in files.items():
        (tmp_path / file).write_text(body)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "rec").write_text('#!/bin/bash\nprintf \'%s\\0\' "$@" >> "$REC_OUT"\nprintf \'\\n\' >> "$REC_OUT"\n')
    (stubs / "rec").chmod(stat.S_IRWXU)
    out = tmp_path / "calls"
    out.write_text("")
    script = tmp_path / "snippet.sh"
    script.write_text(text)
    subprocess.run([BASH, str(script)], env={"PATH": f"{stubs}:/usr/bin:/bin", "REC_OUT": str(out)},
                   cwd=tmp_path, check=True, timeout=30)
    expected = [line.split("\0")[:-1] for line in out.read_text().split("\n")[:-1]]
    monkeypatch.chdir(tmp_path)  # bash ran in tmp_path: `source ./env.sh` is read from there
    calls, _ = _walk(text, str(script))
    assert calls == expected


def test_an_unclosed_test_is_a_syntax_error() -> None:
    """bash reads to the end of the file looking for `]]` and runs nothing of it."""
    calls, diagnostics = _walk("[[ -n x\nrec a\n")
    assert calls == [] and [d.kind for d in diagnostics] == ["launch.syntax"]


def test_a_leading_redirect_is_not_a_command_word() -> None:
    """INVALID before the fix: `>log 2>&1 rec x` was read as the command `log rec x`, with a
    syntax warning for a line bash runs fine."""
    calls, diagnostics = _walk(">log 2>&1 rec x\n")
    assert calls == [["x"]] and diagnostics == []
