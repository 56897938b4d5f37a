"""`simulate --trace DIR` keeps the recorded schedule, but in DIR/trace beside its spec.json:
`report --trace DIR`, the next step a user takes, said "no rank-N.jsonl trace files (was the run
recorded?)". simulate now names the directory `report --trace` reads, and that command runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from auditor import cli

ROOT = Path(__file__).resolve().parents[2]
PP2 = ROOT / "examples" / "glm5_1_lora_pp2.sh"


@pytest.mark.heavy
@pytest.mark.wheels
def test_simulate_names_the_trace_report_reads(tmp_path, capsys, real_sources):
    kept = tmp_path / "sim"
    cli.main(["simulate", "--config", str(PP2), "--trace", str(kept)])
    err = capsys.readouterr().err
    said = re.search(r"report --trace (\S+)", err)
    assert said, err
    assert Path(said.group(1)).parent == kept
    code = cli.main(["report", "--trace", said.group(1), "--format", "json", "-o",
                     str(tmp_path / "run.json")])
    assert code in (0, 1), capsys.readouterr().err
    assert "no rank-N.jsonl" not in capsys.readouterr().err
