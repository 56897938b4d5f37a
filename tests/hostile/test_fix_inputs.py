"""`fix --config` with a launch script that cannot be read gets the one line `scan` gives it
(exit 2 naming the script), not an internal error: fix reads the script before its scan does.

Found by running `p2paudit fix --config /tmp` and `fix --config` on a copy of Megatron-LM's
examples/pretrain_gpt_distributed_with_mp.sh (NVIDIA/Megatron-LM 4f8e9ac412) with a Latin-1 byte
in an `export` line (an editor saving in ISO-8859-1).
"""

from __future__ import annotations

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


def test_fix_says_what_scan_says_of_the_same_script(tmp_path, capsys):
    script = tmp_path / "run.sh"
    script.write_bytes(LATIN1)
    assert cli.main(["scan", "--config", str(script)]) == EXIT_INPUT
    scan = capsys.readouterr().err.strip().removeprefix("p2paudit scan: ")
    assert cli.main(["fix", "--config", str(script)]) == EXIT_INPUT
    assert capsys.readouterr().err.strip().removeprefix("p2paudit fix: ") == scan
    assert Path(script).read_bytes() == LATIN1
