"""`fix --config` with a launch script that cannot be read gets the one line `scan` gives it
(exit 2 naming the script), not an internal error: fix reads the script before its scan does.

Found by running `p2paudit fix --config /tmp` and `fix --config` on a copy of Megatron-LM's
examples/pretrain_gpt_distributed_with_mp.sh (NVIDIA/Megatron-LM 4f8e9ac412) with a Latin-1 byte
in an `export` line (an editor saving in ISO-8859-1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.errors import EXIT_INPUT

LATIN1 = (b"#!/bin/bash\n# torch==2.10.0\nexport RUN_NAME=\"caf\xe9\"\n"
          b"torchrun --nproc_per_node 2 pretrain_gpt.py --pipeline-model-parallel-size 2\n")


@pytest.mark.parametrize("case", ["directory", "missing", "latin1", "nul"])
def test_an_unreadable_script_is_one_line_naming_it(tmp_path, capsys, case):
    script = tmp_path / "run.sh"
    if case == "directory":
        script.mkdir()
    elif case == "latin1":
        script.write_bytes(LATIN1)
    elif case == "nul":
        script.write_bytes(b"\0\x7fELF" + LATIN1)
    before = script.read_bytes() if script.is_file() else None
    assert cli.main(["fix", "--config", str(script)]) == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"p2paudit fix: error: {script}"), err
    assert "internal error" not in err and len(err.splitlines()) == 1
    if before is not None:
        assert script.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == (["run.sh"] if case != "missing" else [])


def test_scan_reads_a_latin1_script_that_fix_refuses_to_write_back(tmp_path, capsys):
    """Bash runs the Latin-1 byte, so scan reads the script (the byte named as U+FFFD); fix would
    write the text back with that byte changed, so it refuses, naming the line."""
    script = tmp_path / "run.sh"
    script.write_bytes(LATIN1)
    assert cli.main(["scan", "--config", str(script), "--format", "json"]) != EXIT_INPUT
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["where"] for f in findings if f["kind"] == "launch.not-utf8"] == [f"{script}:3"]
    assert cli.main(["fix", "--config", str(script)]) == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"p2paudit fix: error: {script}:3: not UTF-8 text (byte 0xe9)"), err
    assert Path(script).read_bytes() == LATIN1
