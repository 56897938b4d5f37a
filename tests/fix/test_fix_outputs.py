"""Wherever a finding is shown, its verified patch is shown with it: under its cause in the
text and HTML reports, as SARIF `fixes` (valid against the OASIS SARIF 2.1.0 schema, replacing
exactly the script's characters the diff changes), and as the finding's `patch` in the JSON
document (valid against docs/schema/scan-document.schema.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from auditor.fix import edits, report
from auditor.fix import plan as fix_plan
from auditor.report import text
from auditor.report.html import render_html
from auditor.report.sarif import to_sarif
from auditor.scan import ScanInputs

pytestmark = pytest.mark.usefixtures("real_sources")

ROOT = Path(__file__).resolve().parents[2]
SARIF = jsonschema.Draft4Validator(json.loads((ROOT / "tests" / "sarif" / "sarif-schema-2.1.0.json").read_text()))
DOCUMENT = jsonschema.Draft202012Validator(
    json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text()))


@pytest.fixture(scope="module")
def fixed(tmp_path_factory) -> tuple[fix_plan.FixPlan, dict]:
    script = tmp_path_factory.mktemp("fix") / "run.sh"
    shutil.copy(ROOT / "examples" / "glm5_1_lora_pp4.sh", script)
    plan = fix_plan.make(ScanInputs(str(script), torch_version="2.10.0"), simulate=False)
    return plan, report.attach(plan)


@pytest.mark.heavy
def test_sarif_carries_each_verified_patch_as_fixes(fixed):
    plan, doc = fixed
    log = to_sarif(doc)
    assert [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in SARIF.iter_errors(log)] == []
    results = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    assert {"batch-runs-unbatched", "timeout-too-large"} <= {k for k, r in results.items() if "fixes" in r}
    # lazy-init-unbounded, which the DETAIL cause explains but which has a reason of its own,
    # brings its own fix under that cause.
    assert any("TORCH_NCCL_USE_COMM_NONBLOCKING" in fix["description"]["text"]
               for fix in results["batch-runs-unbatched"]["fixes"])
    # The replacements, made on the script as scanned, give the verified patch.
    made = []
    for r in results.values():
        for fix in r.get("fixes", []):
            [change] = fix["artifactChanges"]
            assert change["artifactLocation"]["uri"] == plan.path
            made += [edits.TextEdit(plan.path, x["deletedRegion"]["charOffset"],
                                    x["deletedRegion"]["charLength"],
                                    x.get("insertedContent", {}).get("text", ""))
                     for x in change["replacements"]]
    assert edits.apply(plan.source, made) == plan.patched[plan.path]


def test_text_and_html_show_the_patch_under_its_cause(fixed):
    _, doc = fixed
    shown = text.scan_report(doc)
    cause = shown[shown.index("ERROR   batch-runs-unbatched"):shown.index("WARNING timeout-too-large")]
    assert "patch (remove TORCH_DISTRIBUTED_DEBUG, verified by a re-scan" in cause
    assert "-export TORCH_DISTRIBUTED_DEBUG=DETAIL" in cause
    html = render_html(doc)
    assert "patch (remove TORCH_DISTRIBUTED_DEBUG), verified by a re-scan" in html
    assert "-export TORCH_DISTRIBUTED_DEBUG=DETAIL" in html


def test_the_document_with_patches_keeps_its_contract(fixed):
    _, doc = fixed
    assert [e.message for e in DOCUMENT.iter_errors(json.loads(json.dumps(doc, default=str)))] == []
    patch = next(f for f in doc["findings"] if f["kind"] == "batch-runs-unbatched")["patch"]
    assert patch["verified"] and patch["simulated"] is False
    assert patch["findings"]["unbatched-contradiction"] == "gone"
    broken = json.loads(json.dumps(doc, default=str))
    next(f for f in broken["findings"] if "patch" in f)["patch"]["checked_by"] = "hope"
    assert list(DOCUMENT.iter_errors(broken))
