"""`gate --format sarif` carries the verified patch as SARIF `fixes` on each new failure a
cause with a mechanical remedy explains (issue 24 item 4), valid against SARIF 2.1.0; the text
names `p2paudit fix ...`. The run: Megatron-LM's pretrain_gpt.py as
tests/fix/test_pyenv_pointer.py writes it (NVIDIA/Megatron-LM core_v0.17.0
examples/llama/train_llama3_8b_h100_fp8.sh), DETAIL set in the trainer, gated from torch 2.11.0
to 2.10.0."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from auditor import cli
from auditor.fix import edits
from tests.fix.test_pyenv_pointer import _files

pytestmark = pytest.mark.usefixtures("real_sources")

ROOT = Path(__file__).resolve().parents[2]
SARIF = jsonschema.Draft4Validator(json.loads((ROOT / "tests" / "sarif" / "sarif-schema-2.1.0.json").read_text()))


def test_gate_sarif_carries_the_verified_patch(tmp_path, capsys):
    script = _files(tmp_path)
    baseline = tmp_path / "baseline.json"
    cli.main(["scan", "--config", str(script), "--torch", "2.11.0", "--format", "json",
              "-o", str(baseline)])
    out = tmp_path / "gate.sarif"
    assert cli.main(["gate", "--config", str(script), "--baseline", str(baseline),
                     "--torch", "2.10.0", "--format", "sarif", "-o", str(out)]) == 1
    log = json.loads(out.read_text())
    assert [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in SARIF.iter_errors(log)] == []
    results = log["runs"][0]["results"]
    new = [r for r in results if r["ruleId"] == "gate-new-contradiction"]
    assert len(new) == 5 and all(r["baselineState"] == "new" for r in new)
    trainer = str(tmp_path / "pretrain_gpt.py")
    text = (tmp_path / "pretrain_gpt.py").read_text()
    for r in new:
        (fix,) = r["fixes"]
        assert "verified by p2paudit's re-scan" in fix["description"]["text"]
        (change,) = fix["artifactChanges"]
        assert change["artifactLocation"]["uri"] == trainer
        made = [edits.TextEdit(trainer, x["deletedRegion"]["charOffset"], x["deletedRegion"]["charLength"],
                               x.get("insertedContent", {}).get("text", "")) for x in change["replacements"]]
        assert 'os.environ["TORCH_DISTRIBUTED_DEBUG"]' not in edits.apply(text, made)
    # The text format names the command instead (no re-scan there).
    capsys.readouterr()
    assert cli.main(["gate", "--config", str(script), "--baseline", str(baseline),
                     "--torch", "2.10.0"]) == 1
    assert "patch: p2paudit fix --config" in " ".join(capsys.readouterr().out.split())
