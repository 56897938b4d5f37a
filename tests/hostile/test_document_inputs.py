"""Documents given to `diff`, `gate --baseline` and `report --scan` that are JSON with `sites`
and `targets` but not what p2paudit wrote (hand-edited, another tool's, cut by a merge) are bad
input naming the file, not an internal error; and a baseline whose target is a relative path that
does not exist where the gate runs (the baseline written in another directory) names the baseline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.errors import EXIT_INPUT

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"
BASELINE = ROOT / "ci" / "baseline" / "glm5_1_lora_pp4.megatron-core-0.17.0.json"
TRACE = ROOT / "tests" / "record_fixtures" / "hang"

BROKEN = {
    "site-not-object": {"sites": [1, 2], "targets": []},
    "site-without-path": {"sites": [{"id": "x"}], "targets": [{"name": "x"}]},
    "target-without-name": {"sites": [], "targets": [{}]},
}


def _one_line(capsys, path: Path, command: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"p2paudit {command}: error: {path}: "), err
    assert "internal error" not in err and len(err.splitlines()) == 1
    return err


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_diff_and_report_refuse_a_document_p2paudit_did_not_write(tmp_path, capsys, case):
    doc = tmp_path / f"{case}.json"
    doc.write_text(json.dumps(BROKEN[case]))
    assert cli.main(["diff", str(doc), str(BASELINE)]) == EXIT_INPUT
    _one_line(capsys, doc, "diff")
    assert cli.main(["report", "--scan", str(doc), "--trace", str(TRACE)]) == EXIT_INPUT
    _one_line(capsys, doc, "report")


def test_a_baseline_target_missing_here_names_the_baseline(tmp_path, capsys):
    """`sites pp.py --format json` written in one directory, the gate run from another."""
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({
        "tool": {"name": "p2paudit", "version": "0.1.0"}, "sites": [], "findings": [],
        "targets": [{"name": "pp", "version": None, "source": "dir", "origin": "no-such-pp.py"}]}))
    assert cli.main(["gate", "--config", str(SEED), "--baseline", str(baseline)]) == EXIT_INPUT
    err = _one_line(capsys, baseline, "gate")
    assert "no-such-pp.py" in err and "--target" in err


def test_the_keys_checked_are_the_schemas():
    from auditor.report import document

    schema = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())
    assert list(document.SITE_KEYS) == schema["$defs"]["site"]["required"]
    assert list(document.TARGET_KEYS) == schema["properties"]["targets"]["items"]["required"]
