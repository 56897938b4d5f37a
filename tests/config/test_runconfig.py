"""The typed config record (auditor.config.runconfig): built from the scan's effective config of
the shipped GLM-5.1 script, every undecided setting an explicit `Unknown` with its reason, never
the string "unknown", and the same bytes through JSON, checked against the document's schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from auditor.config.coerce import overrides_from
from auditor.config.derive import derive
from auditor.config.launch import parse_launch
from auditor.config.runconfig import JSON_UNKNOWN, RunConfig, Unknown
from auditor.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"
PIPELINING = ROOT / "examples" / "pipelining_pp2.sh"  # torch's own schedule, megatron-core unstated
REPORT = {"megatron-core": "0.17.0", "ms-swift": "4.3.0", "mcore-bridge": "1.4.1"}
SCHEMA = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())
# The schema of the document's `config`, with the definitions its references name.
CONFIG = jsonschema.Draft202012Validator({**SCHEMA["properties"]["config"], "$defs": SCHEMA["$defs"]})
NEEDS = ["batch_p2p_comm", "pipeline_model_parallel_size"]


def seed_config(versions: dict[str, str | None] | None = None, torch: str | None = "2.10.0",
                sets: list[str] | None = None, script: Path = SEED):
    launch = parse_launch(script.read_text(), str(script))
    return derive(launch, versions or REPORT, overrides_from(sets or []), torch)


def pipelining_config():
    """Its torch rules rest on the backend, which a torchrun launch whose script is not read
    leaves open (examples/pipelining_train.py itself states gloo: config/pipelining_script.py)."""
    text = PIPELINING.read_text().replace("examples/pipelining_train.py", "examples/not_read_here.py")
    return derive(parse_launch(text, str(PIPELINING)), {"megatron-core": None}, overrides_from([]), "2.13.0")


def test_known_values_are_the_scans():
    record = seed_config().record(NEEDS)
    assert record.value("pipeline_model_parallel_size") == 4
    assert record.known("batch_p2p_comm") is True
    assert record.provenance("batch_p2p_comm").startswith("mcore-bridge:")
    assert not record.is_open("batch_p2p_comm")
    assert record.torch is not None and record.torch.version == "2.10.0"
    assert record.needs == NEEDS


def test_an_undecided_setting_is_an_explicit_unknown_with_its_reason():
    effective = seed_config(versions={**REPORT, "mcore-bridge": None})
    record = effective.record()
    value = record.value("batch_p2p_comm")
    assert isinstance(value, Unknown)
    assert value.why == effective.get("batch_p2p_comm").provenance and value.why
    assert record.is_unknown("batch_p2p_comm") and record.is_open("batch_p2p_comm")
    assert record.known("batch_p2p_comm") is None
    with pytest.raises(TypeError):
        bool(value)  # an unknown used as a truth value is a bug, not False
    assert not any(s.value == JSON_UNKNOWN for s in record.settings.values())


def test_what_decides_an_unknown_travels_with_it():
    """What the torch rules derive rests on the backend, which `--set` decides."""
    effective = pipelining_config()
    record = effective.record()
    assert record.unknown_inputs("torch_batch_coalesces") == ["distributed_backend"]
    assert list(record.to_json()["unknown_inputs"]) == list(effective.unknown_inputs)  # as derived
    assert record.unknown_inputs("pipeline_model_parallel_size") == []  # known


def test_never_derived_is_open_but_not_unknown():
    record = seed_config().record()
    assert record.value("no_such_setting") is None
    assert not record.is_unknown("no_such_setting") and record.is_open("no_such_setting")
    assert record.provenance("no_such_setting", "never derived") == "never derived"


@pytest.mark.parametrize("case", ["decided", "mcore-bridge unknown", "torch unknown", "--set",
                                  "inputs unknown"])
def test_round_trip_through_json_keeps_every_byte_and_fits_the_schema(case):
    effective = {"decided": lambda: seed_config(),
                 "mcore-bridge unknown": lambda: seed_config({**REPORT, "mcore-bridge": None}),
                 "torch unknown": lambda: seed_config(torch=None),
                 "--set": lambda: seed_config(sets=["virtual_pipeline_model_parallel_size=2"]),
                 "inputs unknown": pipelining_config}[case]()
    record = effective.record(NEEDS)
    text = json.dumps(record.to_json())
    CONFIG.validate(json.loads(text))
    back = RunConfig.from_json(json.loads(text))
    assert back == record
    assert json.dumps(back.to_json()) == text


def test_what_the_scan_adds_round_trips():
    """The bases the scan and simulate add after the derivation keep their place and content."""
    config = seed_config().record(NEEDS).to_json()
    config["release_basis"] = {"stated": {}, "free": ["megatron-core"], "how": "newest and oldest",
                               "combinations": [{"releases": {"megatron-core": "0.17.0"},
                                                 "status": "clean", "headline": "CLEAN: 1 site."}]}
    config["setting_basis"] = {"key": "pipeline_model_parallel_size", "why": "w", "stated": "$6",
                               "cases": [{"value": 2, "status": "clean", "headline": "h",
                                          "starts": True}]}
    config["release_choice"] = "simulated on megatron-core 0.17.0"
    config["command_basis"] = {"shown": 1, "commands": [
        {"line": 45, "status": "clean", "headline": "CLEAN: h", "pipeline_model_parallel_size": 1},
        {"line": 45, "status": "findings", "headline": "FINDINGS: h", "pipeline_model_parallel_size": 2}]}
    CONFIG.validate(config)
    assert json.dumps(RunConfig.from_json(config).to_json()) == json.dumps(config)


def test_a_document_from_before_needs_says_nothing_of_them():
    """The committed gate baseline predates `needs`, `unknown_inputs` and `torch_basis`."""
    doc = json.loads((ROOT / "ci" / "baseline" / "glm5_1_lora_pp4.megatron-core-0.17.0.json").read_text())
    record = RunConfig.from_json(doc["config"])
    assert record.needs is None and record.torch is None
    assert record.value("pipeline_model_parallel_size") == 4


@pytest.mark.parametrize("config, part", [
    ({"effective": ["pipeline_model_parallel_size"]}, "config.effective"),
    ({"provenance": {"batch_p2p_comm": 1}}, "config.provenance.batch_p2p_comm"),
    ({"needs": "batch_p2p_comm"}, "config.needs"),
    ([], "config"),
])
def test_a_config_of_another_shape_is_bad_input_naming_the_part(config, part):
    with pytest.raises(InputError) as caught:
        RunConfig.from_json(config)
    assert caught.value.subject == part


def test_a_loaded_document_with_a_bad_config_is_exit_2_naming_file_and_part(tmp_path):
    """`diff`, `gate --baseline` and `report --scan` read documents from files: one line, exit 2,
    not an internal error from whichever reader touches the config first."""
    doc = tmp_path / "scan.json"
    doc.write_text(json.dumps({"sites": [], "targets": [], "findings": [],
                               "config": {"effective": ["pipeline_model_parallel_size"]}}))
    proc = subprocess.run([sys.executable, "-m", "auditor", "diff", str(doc), str(doc)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"p2paudit diff: error: {doc}: config.effective is not an object (the scan document's schema)"]
