"""A program's words split as GNU getopt_long splits them (bash.getopt), on the grammars of the
rules ([wrappers] option_grammar: GNU sed 4.9, GNU findutils 4.9 xargs)."""

from __future__ import annotations

import pytest

from auditor.bash.getopt import Grammar, read
from auditor.bash.values import Partial, Scalar
from auditor.rulebook.launchers import Spelling

GRAMMARS = Spelling.load(None).option_grammar


@pytest.mark.parametrize("program, words, options, operands", [
    ("sed", ["-ne", "1e date", "-e", "p", "f"], [("-n", None), ("-e", "1e date"), ("-e", "p")], [4]),
    ("sed", ["-nf", "x.sed", "f"], [("-n", None), ("-f", "x.sed")], [2]),
    ("sed", ["-ie", "s/a/b/", "f"], [("-i", "e")], [1, 2]),  # -i's suffix is only attached
    ("sed", ["p", "-n", "--", "-x"], [("-n", None)], [0, 3]),  # options after operands; `--` ends them
    ("sed", ["--expr", "1e ls", "--in-place=.bak"], [("--expression", "1e ls"), ("--in-place", ".bak")], []),
    ("xargs", ["-n1", "numactl", "-i", "all", "python"], [("-n", "1")], [1, 2, 3, 4]),  # the command ends them
    ("xargs", ["-0", "-I{}", "cp", "{}", "d"], [("-0", None), ("-I", "{}")], [2, 3, 4]),
    ("xargs", ["-i", "cp"], [("-i", None)], [1]),
])
def test_words_split_as_getopt_long_splits_them(program: str, words: list[Scalar], options: list[tuple[str, str | None]],
                                                operands: list[int]) -> None:
    got = read(words, Grammar.of(GRAMMARS[program]))
    assert [(o.name, o.value) for o in got.options] == options and list(got.operands) == operands


def test_an_option_word_not_known_statically() -> None:
    word = Partial("-e${X}", (("-e", False), ("${X}", True)))
    got = read([word, "f"], Grammar.of(GRAMMARS["sed"]))
    assert got.options[0].name == "-e" and str(got.options[0].value) == "${X}" and got.operands == (1,)
    assert read([Partial("-n${X}", (("-n", False), ("${X}", True)))], Grammar.of(GRAMMARS["sed"])).options[-1].name == ""
