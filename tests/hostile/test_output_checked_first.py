"""`-o DIR/FILE` whose directory does not exist, or `-o` naming a directory, is refused before the
command does its work, not after: `scan --config run.sh --format json -o ci/p2p-baseline.json`
(docs/commands/gate.md's baseline, in a fresh repository without ci/) ran the whole scan, then
said "the output's directory does not exist"; on a 100,000-line script that was two minutes lost.
"""

from __future__ import annotations

import pytest

from pathlib import Path

from auditor import cli
from auditor.errors import EXIT_INPUT

TOY = Path(__file__).resolve().parents[2] / "tests" / "record_fixtures" / "toy_pipeline.py"


@pytest.mark.parametrize("command", [
    ["scan", "--config"], ["fix", "--config"], ["simulate", "--config"],
])
@pytest.mark.parametrize("where", ["missing-dir", "a-directory"])
def test_the_output_is_checked_before_the_inputs_are_read(tmp_path, capsys, command, where):
    output = tmp_path / "ci" / "p2p-baseline.json" if where == "missing-dir" else tmp_path
    assert cli.main([*command, str(tmp_path / "no-such-run.sh"), "-o", str(output)]) == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert str(output) in err and "no-such-run.sh" not in err.replace(f"{output}", ""), err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "ci").exists()


@pytest.mark.parametrize("output", ["-", "/dev/null", "/dev/stdout", "new.json"])
def test_stdout_devices_and_new_files_are_still_outputs(tmp_path, monkeypatch, output):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["sites", str(TOY), "-o", output]) == 0
