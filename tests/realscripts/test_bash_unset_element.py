"""`unset 'ARR[i]'`: one element of an array removed, as a launch script drops a word from the
command array it built (issue 22 item 4). The construct as eiselekd/lang writes it (commit
0684d4a76ba76daa81ad2455112e2cc292fec1cc, sh/b0.sh: `unset array[$((${#array[@]}-1))]`,
`unset array[-1]`), here on a training command array, inside a branch and out of one."""

from __future__ import annotations

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import CommandNotFollowed, parse_launch

CMD = "CMD=(torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 2 --num-layers 8 --fp16)\n"


def test_the_last_element_unset_is_gone() -> None:
    for unset in ("unset 'CMD[-1]'", "unset 'CMD[${#CMD[@]}-1]'", 'unset "CMD[8]"'):
        config = parse_launch(CMD + unset + '\n"${CMD[@]}"\n', "u.sh")
        assert "fp16" not in config.flags, unset
        assert config.flags["num_layers"].value == "8"


def test_an_element_unset_in_a_branch_is_no_longer_surely_there() -> None:
    """bash: --fp16 runs only where PRECISION is not bf16; the walk cannot tell, so it is not read as
    set (each is the branches' options, its value not known: config.flags `_branch_flags`)."""
    script = CMD + ('if [ "$PRECISION" = bf16 ]; then\n    unset \'CMD[-1]\'\n    CMD+=(--bf16)\nfi\n'
                    '"${CMD[@]}"\n')
    config = parse_launch(script, "b.sh")
    assert all(name not in config.flags or isinstance(config.flags[name].value, Symbolic) for name in ("fp16", "bf16"))
    assert config.flags["pipeline_model_parallel_size"].value == "2"  # before the word unset: known


def test_an_element_unset_in_the_middle_leaves_the_rest_unknown() -> None:
    """bash leaves a gap at index 4 (later indices keep their numbers), which a list cannot hold:
    the words from there on are unknown, never read at shifted indices."""
    config = parse_launch(CMD + "unset 'CMD[4]'\nX=${CMD[5]}\n\"${CMD[@]}\" --seed \"$X\"\n", "m.sh")
    assert "pipeline_model_parallel_size" not in config.flags or isinstance(
        config.flags["pipeline_model_parallel_size"].value, Symbolic)
    assert isinstance(config.flags["seed"].value, Symbolic)
    assert config.launcher == "torchrun pretrain_gpt.py"


def test_a_known_word_after_an_unknown_rest_is_unset_exactly() -> None:
    """`CMD+=(--fp16)` under a test, then known words, then `unset 'CMD[-1]'`: the last word goes,
    what is known before and after the unknown part stays known."""
    script = ("CMD=(torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8)\n"
              'if [ "$X" = y ]; then CMD+=(--fp16); fi\n'
              "CMD+=(--pipeline-model-parallel-size 2 --seed)\nunset 'CMD[-1]'\n\"${CMD[@]}\"\n")
    config = parse_launch(script, "r.sh")
    assert "seed" not in config.flags
    assert config.flags["num_layers"].value == "8"
    assert config.flags["pipeline_model_parallel_size"].value == "2"


def test_an_unknown_subscript_leaves_the_whole_array_unknown() -> None:
    """`$K` may be 0: even the launcher word may be gone, so the command is not followed."""
    with pytest.raises(CommandNotFollowed):
        parse_launch(CMD + "unset 'CMD[$K]'\n\"${CMD[@]}\"\n", "k.sh")
