"""`-o DIR/FILE` whose directory does not exist, or `-o` naming a directory, is refused before the
command does its work, not after: `scan --config run.sh --format json -o ci/p2p-baseline.json`
(docs/commands/gate.md's baseline, in a fresh repository without ci/) ran the whole scan, then
said "the output's directory does not exist"; on a 100,000-line script that was two minutes lost.
"""

from __future__ import annotations

import importlib
import os

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


@pytest.mark.parametrize("command", ["scan", "fix", "simulate", "gate", "report", "diff"])
def test_an_input_the_command_line_names_is_refused_before_the_work(tmp_path, capsys,
                                                                    monkeypatch, command):
    """`-o` naming the `--config` script (or a hard link to it), the `--scan` or `--baseline`
    document or a document `diff` compares: refused before the work. Before, scan and simulate
    found out when writing (after the whole scan or simulation, minutes), and fix had checks of
    its own beside output.refuse_input; now the CLI notes the files the command line names
    (options.INPUT_FILES) and the one check refuses them first."""
    script, doc = tmp_path / "run.sh", tmp_path / "scan.json"
    script.write_text("torchrun --nproc_per_node 2 train.py --pipeline-model-parallel-size 2\n")
    doc.write_text("{}\n")
    os.link(script, tmp_path / "hard.sh")
    argv, output = {
        "scan": (["--config", str(script)], tmp_path / "hard.sh"),
        "fix": (["--config", str(script)], script),
        "simulate": (["--config", str(script)], script),
        "gate": (["--config", str(script), "--baseline", str(doc)], doc),
        "report": (["--scan", str(doc)], doc),
        "diff": ([str(doc), str(script)], doc),
    }[command]

    def work(args):
        raise AssertionError("the command ran before its output was checked")

    monkeypatch.setattr(importlib.import_module(f"auditor.commands.{command}"), "run", work)
    assert cli.main([command, *argv, "-o", str(output)]) == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"p2paudit {command}: error: {output}: is an input of this command"), err
    assert doc.read_text() == "{}\n" and "torchrun" in script.read_text()
