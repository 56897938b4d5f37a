"""A command line that lost its `\\` before a line of array expansions (issue 22 item 4, dev10).

The script reproduces THUDM/slime scripts/run-kimi-k2-Instruct.sh (commit
624b824a898ab0ec1fcb4d373004c7f3852bf515, :166-182): `ray job submit ... -- python3 train.py \\`,
four flag lines, the last (`--update-weight-buffer-size $(( 4 * 512 * 1024 * 1024))`, :172)
without `\\`, then `${MODEL_ARGS[@]} \\`, `${PERF_ARGS[@]} ...` (:173-182). bash runs :166-172 as
the whole command (train.py without its model flags) and then fails on :173 with
`--disable-bias-linear: command not found`: the line is a continuation after expansion.
"""

from __future__ import annotations

import subprocess

import pytest

from auditor.analysis import causes
from auditor.config.launch import parse_launch

HEAD = """#!/bin/bash
set -ex
MODEL_ARGS=(
   --disable-bias-linear
   --num-layers 61
)
EMPTY_ARGS=()
PERF_ARGS=(
   --tensor-model-parallel-size 8
   --pipeline-model-parallel-size 8
)
"""
COMMAND = """ray job submit --address="http://127.0.0.1:8265" \\
   -- python3 train.py \\
   --actor-num-nodes 32 \\
   --update-weight-buffer-size $(( 4 * 512 * 1024 * 1024))
"""


def _broken(config):
    return [d for d in config.diagnostics if d.kind == "launch.broken-continuation"]


def test_a_line_of_flag_arrays_continues_the_command() -> None:
    script = HEAD + COMMAND + "   ${MODEL_ARGS[@]} \\\n   ${PERF_ARGS[@]}\n"
    config = parse_launch(script, "run.sh")
    broken = _broken(config)
    assert len(broken) == 1 and broken[0].severity == "error" and broken[0].where == "run.sh:15"
    assert "`--disable-bias-linear: command not found`" in broken[0].message  # what bash prints
    assert "`${MODEL_ARGS[@]}`" in broken[0].message
    assert config.flags["num_layers"].value == "61"
    assert config.flags["pipeline_model_parallel_size"].value == "8"


def test_what_bash_runs_is_what_the_message_says(tmp_path) -> None:
    # bash itself: the command ends at the line without `\`, and the next fails on its first field
    script = (HEAD + COMMAND + "   ${MODEL_ARGS[@]} \\\n   ${PERF_ARGS[@]}\n").replace(
        'ray job submit --address="http://127.0.0.1:8265" \\\n   -- python3 train.py', "echo ran")
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert "--disable-bias-linear: command not found" in proc.stderr and proc.returncode == 127


def test_an_empty_array_first_leaves_the_next_field_first() -> None:
    script = HEAD + COMMAND + "   ${EMPTY_ARGS[@]} \\\n   ${PERF_ARGS[@]}\n"
    broken = _broken(config := parse_launch(script, "run.sh"))
    assert len(broken) == 1 and "`--tensor-model-parallel-size: command not found`" in broken[0].message
    assert config.flags["pipeline_model_parallel_size"].value == "8"


def test_an_array_holding_a_command_is_its_own_command() -> None:
    script = HEAD + "POST=(echo done)\n" + COMMAND + "${POST[@]}\n"
    assert _broken(parse_launch(script, "run.sh")) == []


def test_an_unknown_expansion_on_an_indented_line_is_not_taken_as_nothing() -> None:
    """Fail closed: `${EXTRA_ARGS[@]}` from code not read here may hold this command's flags
    (then they are lost) or a command of its own; the flags it could hold are unknown."""
    script = HEAD + "source ./unread.sh\n" + COMMAND + "   ${EXTRA_ARGS[@]} \\\n   ${PERF_ARGS[@]}\n"
    config = parse_launch(script, "run.sh")
    broken = _broken(config)
    assert len(broken) == 1 and broken[0].severity == "warning"
    assert "`${EXTRA_ARGS[@]}`" in broken[0].message and "not known statically" in broken[0].message
    assert config.flags["pipeline_model_parallel_size"].value == "8"
    assert any(d.kind == "launch.unresolved-args" and "${EXTRA_ARGS[@]}" in d.message for d in config.diagnostics)


def test_an_unknown_command_at_the_margin_after_a_one_line_command_stays_apart() -> None:
    script = HEAD + "source ./unread.sh\ntorchrun pretrain_gpt.py --pipeline-model-parallel-size 2\n$POST_HOOK\n"
    assert _broken(parse_launch(script, "run.sh")) == []


@pytest.mark.parametrize("order", [("unbatched", "broken"), ("broken", "unbatched")])
def test_the_broken_command_is_the_first_cause(order) -> None:
    """With DETAIL on torch 2.10 the command as read has unbatched P2P: a run-time finding of the
    intended command, which bash never runs as read; the broken line comes first."""
    made = {
        "unbatched": [{"kind": "unbatched-contradiction", "severity": "error", "message": "DETAIL ..."},
                      {"kind": "split-communicators", "severity": "warning", "message": "pairs"}],
        "broken": [{"kind": "launch.broken-continuation", "severity": "error", "message": "stops at line 15"}],
    }
    findings = [f for name in order for f in made[name]]
    first = causes.group(findings)[0]
    assert findings[first.index]["kind"] == "launch.broken-continuation"
