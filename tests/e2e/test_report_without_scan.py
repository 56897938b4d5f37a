"""`report --trace DIR` without `--scan` (the 3 a.m. path: a hung job, no scan at hand) writes
the same contract as every other command: the JSON document valid against
docs/schema/scan-document.schema.json (its `tool` with the version that wrote it), and SARIF whose
driver names that version, so a pasted report says which p2paudit judged it.

The trace is tests/record_fixtures/hang, recorded by `p2paudit record` of a 4-rank gloo pipeline
(tests/record_fixtures/regenerate.py); the same gap showed on a 2-rank gloo recording of
`dist.recv(t, 1 - rank)` on both ranks.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from auditor import __version__, cli
from auditor.errors import EXIT_FINDINGS

ROOT = Path(__file__).resolve().parents[2]
HANG = ROOT / "tests" / "record_fixtures" / "hang"
SCHEMA = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())


def test_the_json_document_of_a_trace_alone_is_the_contract(capsys):
    code = cli.main(["report", "--trace", str(HANG), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["tool"] == {"name": "p2paudit", "version": __version__}
    assert code == doc["verdict"]["exit_code"] == EXIT_FINDINGS


def test_the_sarif_of_a_trace_alone_names_the_version(capsys):
    code = cli.main(["report", "--trace", str(HANG), "--format", "sarif"])
    driver = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("p2paudit", __version__)
    assert code == EXIT_FINDINGS
