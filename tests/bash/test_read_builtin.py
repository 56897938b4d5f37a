"""auditor.bash.read_builtin on its own: the options `read` is given, and what it assigns from a
text, each value checked against bash itself (the walk's use is in
tests/realscripts/test_bash_read_heredoc.py)."""

from __future__ import annotations

import subprocess

import pytest

from auditor.bash.read_builtin import ReadOptions, as_double_quoted, read_array, read_options, read_text


def test_options_r_d_and_a_bundled_or_not_and_nothing_else() -> None:
    assert read_options(["-r", "-d", "", "X"]) == read_options(["-rd", "", "X"])
    got = read_options(["-rd", "", "X"])
    assert got is not None and got.raw and got.delimiter == "\0"
    assert read_options(["X"]) is not None and read_options(["X"]).delimiter == "\n"  # type: ignore[union-attr]
    assert read_options(["-p", "prompt", "X"]) is None and read_options(["-ar", "ARR"]) is None
    assert read_options(["-ra", "ARR"]) == read_options(["-r", "-a", "ARR"]) == ReadOptions(True, "\n", True)


def test_read_a_splits_its_line_on_blanks() -> None:
    """`read -r -a ARR <<< "--executor local  --gpus 8"` (Megatron-Bridge 067f987df0
    examples/models/deepseek_v4/conversion.sh:63-64): the words, in order."""
    options = read_options(["-r", "-a", "ARR"])
    assert options is not None
    assert read_array("--executor local  --gpus 8\n", options, " \t\n") == (["--executor", "local", "--gpus", "8"], 0)
    assert read_array("\n", options, " \t\n") == ([], 0)
    assert read_array("a,b\n", options, ",") is None


@pytest.mark.parametrize("words,names,ifs,text", [
    (["-r"], ["A", "B"], " \t\n", "  x  y  z  "),
    (["-r"], ["A", "B"], ",", "a,b,"),
    (["-r"], ["A"], ",", "2,4"),
    (["-r"], ["A", "B", "C"], ",", "a,,b"),
    ([], ["A"], " \t\n", "a\\\nb"),
    (["-r", "-d", ","], ["A"], " \t\n", " a b ,c"),
])
def test_what_read_assigns_is_what_bash_assigns(words, names, ifs, text) -> None:
    options = read_options(words)
    assert options is not None
    got = read_text(text + "\n", options, names, ifs)
    quote = lambda s: "'" + s.replace("'", "'\\''") + "'"  # noqa: E731
    body = (f"IFS={quote(ifs)} read {' '.join(map(quote, words))} {' '.join(names)} <<< {quote(text)}; "
            "echo \"rc=$?\"; " + "; ".join(f'printf "%s\\0" "${n}"' for n in names))
    out = subprocess.run(["bash", "-c", body], capture_output=True, text=True, timeout=30).stdout
    status, _, values = out.partition("\n")
    assert got == (values.split("\0")[:len(names)], int(status[3:]))


def test_a_here_document_body_is_expanded_as_a_double_quoted_word() -> None:
    assert as_double_quoted('say "hi" $X') == '"say \\"hi\\" $X"'
