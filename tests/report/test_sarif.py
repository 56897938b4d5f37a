"""SARIF 2.1.0 output, validated against the OASIS schema (tests/sarif/, offline) for a real
scan, a scan joined with a trace, and a gate run; and what code-scanning UIs read from it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest
from tests.analysis.test_join import SEED, megatron_programs, write_trace

from auditor import cli
from auditor.analysis import causes
from auditor.analysis.join import join
from auditor.dynamic.trace import read_trace_dir
from auditor.report.sarif import to_sarif
from auditor.scan import ScanInputs, run_scan

SCHEMA = json.loads((Path(__file__).parents[1] / "sarif" / "sarif-schema-2.1.0.json").read_text())
VALIDATOR = jsonschema.Draft4Validator(SCHEMA)


def errors(log: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(log)]


@pytest.fixture(scope="module")
def seed_scan(real_sources) -> dict:
    return run_scan(ScanInputs(str(SEED), torch_version="2.10.0"))


def test_the_validator_is_live():
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                         "results": [{"message": {"text": "m"}, "level": "fatal"}]}]}
    assert errors(bad)


def test_scan_as_sarif_is_valid_and_points_at_the_sites(seed_scan):
    """One result per cause (analysis.causes), as the text and HTML show them: the DETAIL cause
    at its script line, the unbatched sites it explains as its related locations and code flow."""
    log = to_sarif(seed_scan)
    assert errors(log) == []
    run = log["runs"][0]
    results = run["results"]
    findings = seed_scan["findings"]
    grouped = causes.group(findings)
    assert len(results) == len(grouped) < len(findings)
    rules = run["tool"]["driver"]["rules"]
    for r, c in zip(results, grouped):
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"] == findings[c.index]["kind"]
        assert r["level"] == {"error": "error", "warning": "warning", "info": "note"}[c.severity]
    assert "unbatched-contradiction" not in {r["ruleId"] for r in results}
    cause = next(r for r in results if r["ruleId"] == "batch-runs-unbatched")
    where = next(f for f in findings if f["kind"] == "batch-runs-unbatched")["where"]
    own = cause["locations"][0]["physicalLocation"]
    assert own["artifactLocation"]["uriBaseId"] == "SRCROOT"
    assert f"{Path(unquote(own['artifactLocation']['uri'])).resolve()}:" \
           f"{own['region']['startLine']}" == \
           f"{Path(where.rpartition(':')[0]).resolve()}:{where.rpartition(':')[2]}"
    assert "Explains unbatched-contradiction" in cause["message"]["text"]
    sites = {s["id"]: s for s in seed_scan["sites"]}
    first = sites[next(f for f in findings if f["kind"] == "unbatched-contradiction")["site_ids"][0]]
    related = cause["relatedLocations"][0]["physicalLocation"]
    assert related["artifactLocation"] == {"uri": first["path"], "uriBaseId": "megatron-core"}
    assert related["region"]["startLine"] == first["line"]
    assert "megatron-core" in run["originalUriBaseIds"]
    steps = [x["location"]["message"]["text"] for x in cause["codeFlows"][0]["threadFlows"][0]["locations"]]
    assert steps == first["paths"][0]
    # A finding about the launch script points at the script's line.
    env = next(r for r in results if r["ruleId"] == "env-unread")
    where = next(f for f in findings if f["kind"] == "env-unread")["where"]
    assert env["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "SRCROOT"
    # ... as a URI relative to SRCROOT (the directory it ran in), naming the same file
    uri = env['locations'][0]['physicalLocation']['artifactLocation']['uri']
    assert f"{Path(unquote(uri)).resolve()}:" \
           f"{env['locations'][0]['physicalLocation']['region']['startLine']}" == \
           f"{Path(where.rpartition(':')[0]).resolve()}:{where.rpartition(':')[2]}"


def test_joined_report_as_sarif_is_valid(seed_scan, tmp_path):
    write_trace(tmp_path, megatron_programs(seed_scan["sites"], world=16, pp=4, microbatches=2),
                world=16)
    joined = join(seed_scan, read_trace_dir(tmp_path))
    log = to_sarif(joined)
    assert errors(log) == []
    kinds = {r["ruleId"] for r in log["runs"][0]["results"]}
    assert {"unbatched-run", "pair-on-two-communicators"} <= kinds
    # Without a gate there is no baseline to compare with.
    assert all("baselineState" not in r for r in log["runs"][0]["results"])


def test_gate_sarif_marks_what_is_new(real_sources, tmp_path, capsys, seed_scan):
    baseline = tmp_path / "baseline.json"
    old = copy.deepcopy(seed_scan)
    old["findings"] = [f for f in old["findings"] if f["kind"] != "env-unread"]
    baseline.write_text(json.dumps(old))
    out = tmp_path / "gate.sarif"
    code = cli.main(["gate", "--config", str(SEED), "--baseline", str(baseline), "--target",
                     "megatron-core==0.17.0", "--format", "sarif", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    log = json.loads(out.read_text())
    assert errors(log) == []
    states = {r["ruleId"]: r["baselineState"] for r in log["runs"][0]["results"]}
    assert states["env-unread"] == "new" and states["batch-runs-unbatched"] == "unchanged"
