"""`read -r -d '' NAME <<EOF ... EOF`: the here-document's whole text becomes NAME (issue 22 item 4).

The shape is OpenRLHF's (OpenRLHF/OpenRLHF examples/scripts/train_dpo_llama.sh, commit
3c3be6234e0cb353e76bb8019947db9dfe99fca7): the module and its flags in an unquoted here-document,
one flag a line joined by backslash-newlines, then `deepspeed --module $training_commands`.
`-d ''` reads up to a NUL, so every line; bash strips the leading and trailing IFS whitespace.
"""

from __future__ import annotations

from auditor.config.launch import parse_launch

SCRIPT = """OUT=./checkpoint/llama3-8b-sft
read -r -d '' training_commands <<EOF
train.py \\
   --save_path $OUT \\
   --zero_stage 2
EOF
deepspeed $training_commands
"""


def test_the_document_is_the_variables_value() -> None:
    config = parse_launch(SCRIPT, "run.sh")
    assert config.launcher == "deepspeed train.py"
    flags = {name: flag.value for name, flag in config.flags.items()}
    assert flags["save_path"] == "./checkpoint/llama3-8b-sft" and flags["zero_stage"] == "2"


QUOTED = """OUT=./checkpoint
read -r -d '' training_commands <<'EOF'
train.py --save_path $OUT --zero_stage 2
EOF
deepspeed $training_commands
"""


def test_a_quoted_delimiter_keeps_the_text_unexpanded() -> None:
    config = parse_launch(QUOTED, "run.sh")
    assert config.flags["save_path"].value == "$OUT" and config.flags["zero_stage"].value == "2"


def test_read_without_d_reads_one_line_which_the_continuations_joined() -> None:
    """`read -r NAME <<EOF` reads one line; in an unquoted here-document bash removes each
    backslash-newline first, so that one line is the whole command (checked with bash 5)."""
    config = parse_launch(SCRIPT.replace("read -r -d ''", "read -r"), "run.sh")
    assert config.launcher == "deepspeed train.py"
    assert config.flags["zero_stage"].value == "2"
