"""`scan --matrix KEY=V1,V2,...` prints a table a user can read and paste at 80 columns: the
header row and each value row on one line, the columns aligned. With the documented
`--matrix pipeline_model_parallel_size=1,2,4,8` on the shipped GLM-5.1 script the rows were
88 columns wide, so each wrapped its last value onto a line of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import cli

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"


@pytest.mark.wheels
def test_the_matrix_table_fits_80_columns(capsys, monkeypatch, real_sources):
    monkeypatch.setenv("COLUMNS", "80")
    cli.main(["scan", "--config", str(SEED), "--torch", "2.10.0",
              "--matrix", "pipeline_model_parallel_size=1,2,4,8"])
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].split() == ["pipeline_model_parallel_size", "1", "2", "4", "8"]
    rows = {line.split()[0] + (" " + line.split()[1] if line.split()[0] == "sites" else ""): line
            for line in lines[1:] if line.startswith("  ") and not line.startswith("    ")}
    assert rows["data_parallel_size"].split()[1:] == ["32", "16", "8", "4"]
    assert rows["sites unreachable"].split()[2:] == ["32", "22", "22", "22"]
    # the columns line up: each value ends where its header ends
    ends = [lines[0].index(v) + len(v) for v in ("1", "2", "4", "8")]
    first = rows["data_parallel_size"]
    assert [first.index(c, e - len(c)) + len(c) for c, e in zip(["32", "16", "8", "4"], ends)] == ends
