"""auditor.bash.conditions and auditor.bash.expand: which branch of an if/case a launch script
takes when the values it tests are known, decided only where the outcome is certain. The tests
are those of alibaba/Pai-Megatron-Patch@a098ca5acb examples/qwen3_vl/run_mcore_qwen.sh
(`if [ $ENV = dsw ]; then ... elif [ $ENV = dlc ]`, lines 16-22; `if [ -z ${MP_PP0_LAYERS} ]`,
line 222) and NVIDIA/Megatron-LM@d98e8a64dd examples/mamba/train.sh (`case "${MODEL_SCALE}" in
"800M") ... "8B") ... *)`, line 7). tests/bash/test_bash_oracle.py holds the whole walk to bash."""

from __future__ import annotations

import pytest

from auditor.bash.conditions import case_branch, condition
from auditor.bash.expand import Expander
from auditor.bash.lexer import Lexer
from auditor.bash.parser import Branches, ShellParser


def branches(text: str, **environ: str) -> tuple[Branches, Expander]:
    """The script's first if/case, and an expander holding its assignments and the caller's env."""
    nodes = ShellParser(Lexer(text, "run.sh").tokens(), "run.sh", []).parse()
    expander = Expander("run.sh", environ)
    for node in nodes:
        if isinstance(node, Branches):
            return node, expander
        for word in node.words:  # `NAME=value` lines before it
            expander.assign(word, exported=False)
    raise AssertionError("no if/case in the script")


IF = "if [ $ENV = dsw ]; then\n  NPROC=1\nelif [ $ENV = dlc ]; then\n  NPROC=8\nfi\n"


@pytest.mark.parametrize("environ, taken", [
    ({"ENV": "dsw"}, [True, None]),  # the first holds: the elif is not reached
    ({"ENV": "dlc"}, [False, True]),
    ({}, [None, None]),  # $ENV unset in the caller's environment is not known here: undecided
])
def test_if_tests_of_known_values_are_decided(environ, taken):
    node, expander = branches(IF, **environ)
    first = condition(node.conditions[0], expander.expand)
    assert first == taken[0]
    if first is not True:
        assert condition(node.conditions[1], expander.expand) == taken[1]


@pytest.mark.parametrize("test, outcome", [
    ('[ -z "$PP_LAYERS" ]', True), ('[ -n "$PP_LAYERS" ]', False),
    ("[ $PP -gt 1 ]", True), ("[ $PP -eq 1 ]", False), ("[[ $PP == 2 ]]", True),
    ("[ $PP -gt 1 ] && [ $TP = 2 ]", False), ("! [ $PP = 2 ]", False),
    ("[ -f /etc/hosts ]", None),  # a file test: the run's machine decides, not the script
    ("[ $PP -gt abc ]", None),  # bash reports an error: nothing certain
])
def test_the_operators_decided_and_the_others_not(test, outcome):
    node, expander = branches(f"PP=2\nTP=4\nPP_LAYERS=\nif {test}; then\n  x=1\nfi\n")
    assert condition(node.conditions[0], expander.expand) is outcome


def test_case_picks_the_first_matching_pattern_or_none():
    script = 'MODEL_SCALE={}\ncase "${{MODEL_SCALE}}" in\n"800M") L=1;;\n"8B"|"9B") L=4;;\n*B) L=8;;\nesac\n'
    for size, body in (("800M", 0), ("9B", 1), ("70B", 2), ("8x7", 3)):  # 3: no pattern matches
        node, expander = branches(script.format(size))
        assert case_branch(node.subject, node.patterns, expander.expand) == body
    node, expander = branches('case "${MODEL_SCALE}" in\n"8B") L=4;;\nesac\n')  # not known: undecided
    assert case_branch(node.subject, node.patterns, expander.expand) is None
