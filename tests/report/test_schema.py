"""The JSON document is a contract (docs/schema/scan-document.schema.json): every command that
writes one writes it valid, on real inputs, and the schema rejects what breaks the contract."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from auditor import cli

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"
BASELINE = ROOT / "ci" / "baseline" / "glm5_1_lora_pp4.megatron-core-0.17.0.json"
TOY = ROOT / "tests" / "record_fixtures" / "toy_pipeline.py"
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def written(capsys, *argv: str) -> tuple[int, dict]:
    code = cli.main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_schema_is_a_valid_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.wheels
@pytest.mark.parametrize("torch", ["2.10.0", "2.11.0", "2.11.0a0"])
def test_scan_documents_are_valid(capsys, real_sources, torch):
    code, doc = written(capsys, "scan", "--config", str(SEED), "--torch", torch)
    VALIDATOR.validate(doc)
    assert doc["verdict"]["exit_code"] == code


@pytest.mark.wheels
def test_gate_and_sites_documents_are_valid(capsys, real_sources):
    code, doc = written(capsys, "gate", "--config", str(SEED), "--baseline", str(BASELINE))
    VALIDATOR.validate(doc)
    assert doc["verdict"]["exit_code"] == code == 0
    code, doc = written(capsys, "sites", "megatron-core==0.17.0")
    VALIDATOR.validate(doc)


def test_a_joined_report_document_is_valid(capsys, tmp_path):
    inventory = tmp_path / "sites.json"
    assert cli.main(["sites", str(TOY), "--format", "json", "-o", str(inventory)]) == 0
    code = cli.main(["report", "--scan", str(inventory), "--trace",
                     str(ROOT / "tests" / "record_fixtures" / "hang"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    VALIDATOR.validate(doc)
    assert doc["verdict"]["exit_code"] == code
    assert doc["verdict"]["deadlock"] == doc["run"]["waitfor"]["deadlock"]


def _deadlock_doc() -> dict:
    """A real deadlock verdict: a 24 MiB send-first exchange asked of the network's transports."""
    from auditor.analysis.waitfor.deadlock import deadlock
    from auditor.analysis.waitfor.model import Conditions, Group, Op
    from auditor.analysis.waitfor.replay import analyze

    pair = Group((0, 1), "pp")
    programs = {r: [Op(r, 0, "isend", pair, 1 - r, 24 << 20),
                    Op(r, 1, "irecv", pair, 1 - r, 24 << 20)] for r in (0, 1)}
    d = deadlock(lambda c: analyze(programs, c), Conditions.for_transport("net"), "2.10.0")
    doc = copy.deepcopy(json.loads(BASELINE.read_text()))
    doc["verdict"] = {"status": "inconclusive", "headline": "INCONCLUSIVE: x", "exit_code": 1,
                      "undecided": [{"what": "will it deadlock", "decide": d.decide()}],
                      "deadlock": d.to_json()}
    return doc


@pytest.mark.parametrize("breakage", [
    lambda d: d["verdict"]["deadlock"].update(decide=None),
    lambda d: d["verdict"]["deadlock"].update(can_deadlock=False),
    lambda d: d["verdict"]["deadlock"]["transports"][1].update(decide=""),
    lambda d: d["verdict"]["deadlock"]["transports"][0]["transport"].update(bound="guessed"),
    lambda d: d["verdict"]["deadlock"].update(transports=[]),
])
def test_the_schema_holds_the_two_deadlock_verdicts(breakage):
    doc = _deadlock_doc()
    VALIDATOR.validate(doc)
    breakage(doc)
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(doc)


@pytest.mark.parametrize("breakage", [
    lambda d: d["sites"][0].pop("id"),
    lambda d: d["sites"][0].update(verdict="fine"),
    lambda d: d["findings"][0].update(severity="fatal"),
    lambda d: d["verdict"].update(status="clean", exit_code=1),
    lambda d: d["verdict"].update(status="inconclusive", undecided=[]),
    lambda d: d["verdict"].update(status="clean", exit_code=0,
                                  undecided=[{"what": "torch", "decide": "--torch"}]),
])
def test_the_schema_rejects_broken_contracts(breakage):
    doc = copy.deepcopy(json.loads(BASELINE.read_text()))
    doc["verdict"] = {"status": "findings", "headline": "FINDINGS: x", "exit_code": 1,
                      "undecided": []}
    VALIDATOR.validate(doc)
    breakage(doc)
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(doc)
