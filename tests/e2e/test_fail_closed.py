"""Fail closed: inputs just off the path the pipeline was built on never read clean.

Each test is a row of issue 9's table run through the CLI on the real releases: an NGC torch
build, a lower-case env value, a misspelt --entry, bad sizes, a release the rules do not cover, a
Megatron-LM flag the pinned parser rejects, a broken baseline. The exit code and the headline
must agree (the one verdict module decides both).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.analysis.verdict import site_verdict
from auditor.config.derive import derive
from auditor.config.launch import parse_launch
from auditor.config.versions import read_release
from auditor.errors import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, InputError

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"
MEGATRON_LM = ROOT / "examples" / "megatron_lm_gpt_pp2.sh"
BASELINE = ROOT / "ci" / "baseline" / "glm5_1_lora_pp4.megatron-core-0.17.0.json"
pytestmark = pytest.mark.wheels


def scan_json(capsys, *args: str) -> tuple[int, dict]:
    code = cli.main(["scan", "--format", "json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


def edited(tmp_path: Path, source: Path, old: str, new: str) -> str:
    text = source.read_text()
    assert old in text
    path = tmp_path / source.name
    path.write_text(text.replace(old, new))
    return str(path)


# --- the site verdict, as a table -------------------------------------------------------------

@pytest.mark.parametrize("reachable, runs_batched, batch_cfg, expected", [
    ("yes", False, True, "contradiction"),
    ("yes", True, True, "ok"),
    ("yes", False, False, "ok"),          # unbatched, and the config says so
    ("yes", None, True, "unknown"),       # coalescing undecided: never ok
    ("yes", None, False, "ok"),
    ("yes", False, "unknown", "unknown"),  # batch_p2p_comm undecided: never ok
    ("unknown", False, True, "unknown"),
    ("no", False, True, "unreachable"),
])
def test_site_verdict_table(reachable, runs_batched, batch_cfg, expected):
    assert site_verdict(reachable, runs_batched, batch_cfg) == expected


# --- versions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, releases", [
    ("2.10.0", ("2.10.0",)),
    ("2.10.0+cu128", ("2.10.0",)),
    ("2.10.1.post2", ("2.10.1",)),
    ("2.10.0a0+b465a5843b.nv25.10", ("2.9.99", "2.10.0")),
    ("2.11.0.dev20260101", ("2.10.99", "2.11.0")),
    ("2.10.1rc1", ("2.10.0", "2.10.1")),
    ("2.11", ("2.11.0",)),
])
def test_versions_read_as_their_release(text, releases):
    assert read_release(text, "--torch").releases == releases


@pytest.mark.parametrize("text", ["foo", "2.10.0-nightly", "", "latest"])
def test_a_string_that_is_not_a_version_is_bad_input(text):
    with pytest.raises(InputError):
        read_release(text, "--torch")


def test_ngc_torch_is_read_as_2_10_and_finds_the_hang(capsys, real_sources):
    code, doc = scan_json(capsys, "--config", str(SEED), "--torch", "2.10.0a0+b465a5843b.nv25.10")
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "findings"
    assert doc["config"]["effective"]["torch_batch_coalesces"] is False
    assert "pre-release or dev build of 2.10.0" in doc["config"]["provenance"]["torch_version"]
    assert sum(s["verdict"] == "contradiction" for s in doc["sites"]) == 10


def test_a_pre_release_of_the_fixing_release_is_inconclusive(capsys, real_sources):
    """2.11.0a0 may or may not carry the 2.11 fix: never clean, never a guess."""
    code, doc = scan_json(capsys, "--config", str(SEED), "--torch", "2.11.0a0+git1234")
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "inconclusive"
    assert doc["config"]["effective"]["torch_batch_coalesces"] == "unknown"
    assert any("--torch" in u["decide"] for u in doc["verdict"]["undecided"])
    assert not any(s["verdict"] == "ok" and s["runs_batched"] is None for s in doc["sites"])


def test_not_a_torch_version_exits_2(capsys, real_sources):
    assert cli.main(["scan", "--config", str(SEED), "--torch", "two-ten"]) == EXIT_INPUT
    assert "'two-ten' is not a version" in capsys.readouterr().err


# --- environment values as c10d reads them --------------------------------------------------

def test_lower_case_detail_is_detail(capsys, tmp_path, real_sources):
    script = edited(tmp_path, SEED, "TORCH_DISTRIBUTED_DEBUG=DETAIL", "TORCH_DISTRIBUTED_DEBUG=detail")
    code, doc = scan_json(capsys, "--config", script, "--torch", "2.10.0")
    assert code == EXIT_FINDINGS
    assert doc["config"]["effective"]["torch_debug_wrapper"] is True
    assert not any(f["kind"] == "env-bad-value" for f in doc["findings"])


def test_a_debug_level_c10d_rejects_is_an_error(capsys, tmp_path, real_sources):
    script = edited(tmp_path, SEED, "TORCH_DISTRIBUTED_DEBUG=DETAIL", "TORCH_DISTRIBUTED_DEBUG=VERBOSE")
    code, doc = scan_json(capsys, "--config", script, "--torch", "2.11.0")
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "findings"
    bad = [f for f in doc["findings"] if f["kind"] == "env-bad-value"]
    assert bad and bad[0]["severity"] == "error"


def test_check_env_ignores_true():
    """torch's check_env takes only 0/1: `=true` leaves non-blocking creation off."""
    launch = parse_launch("export TORCH_NCCL_USE_COMM_NONBLOCKING=true\n"
                          "torchrun --nproc_per_node 2 pretrain_gpt.py --pipeline-model-parallel-size 2\n")
    effective = derive(launch, {"megatron-core": "0.17.0"}, torch_version="2.11.0")
    assert effective.value("torch_nccl_comm_nonblocking") is False


# --- bad input names the input ----------------------------------------------------------------

@pytest.mark.parametrize("entry, words", [
    ("swift.megatron.trainers.base:BaseMegatronTrainer.train_stepp", "is not defined in module"),
    ("os:system", "is in none of the targets"),
])
def test_an_entry_that_does_not_exist_is_bad_input(capsys, real_sources, entry, words):
    assert cli.main(["scan", "--config", str(SEED), "--torch", "2.10.0", "--entry", entry]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert words in err and entry in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("size", ["0", "-1"])
def test_a_pipeline_size_below_one_is_bad_input(capsys, tmp_path, real_sources, size):
    script = edited(tmp_path, SEED, "--pipeline_model_parallel_size 4",
                    f"--pipeline_model_parallel_size {size}")
    assert cli.main(["scan", "--config", script, "--torch", "2.10.0"]) == EXIT_INPUT
    assert f"pipeline_model_parallel_size={size}" in capsys.readouterr().err


def test_an_error_finding_fails_the_scan(capsys, real_sources):
    """PP=8 of GLM-5.1 raises at start-up: exit 1, and the headline says so."""
    code, doc = scan_json(capsys, "--config", str(SEED), "--torch", "2.11.0",
                          "--set", "pipeline_model_parallel_size=8")
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "findings"
    assert doc["verdict"]["headline"].startswith("DOES NOT START: 78 layers with PP=8")
    assert doc["verdict"]["causes"][0]["kind"] == "layer-split"
    cli.main(["scan", "--config", str(SEED), "--torch", "2.11.0", "--set",
              "pipeline_model_parallel_size=8"])
    assert "no contradiction" not in capsys.readouterr().out


def test_a_megatron_lm_flag_the_pinned_parser_rejects_is_an_error(capsys, tmp_path, real_sources):
    script = edited(tmp_path, MEGATRON_LM, "--pipeline-model-parallel-size 2",
                    "--pipeline-model-parallel-size 2 --overlap-p2p-communication")
    code, doc = scan_json(capsys, "--config", script, "--torch", "2.11.0")
    assert code == EXIT_FINDINGS
    spelled = [f for f in doc["findings"] if f["kind"] == "launch.megatron-spelling"]
    assert spelled and spelled[0]["severity"] == "error"
    assert "does not exist in megatron-core 0.17.0" in spelled[0]["message"]


# --- the gate ---------------------------------------------------------------------------------

def test_gate_against_a_release_the_rules_do_not_cover_fails(capsys, real_sources):
    code = cli.main(["gate", "--config", str(SEED), "--baseline", str(BASELINE),
                     "--target", "megatron-core==0.11.0", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == EXIT_FINDINGS and doc["gate"]["passed"] is False
    kinds = {f["kind"] for f in doc["gate"]["new"]}
    assert "gate-inconclusive" in kinds
    assert not doc["gate"]["fixed"], "nothing is fixed in a release the rules do not cover"
    (inconclusive,) = [f for f in doc["gate"]["new"] if f["kind"] == "gate-inconclusive"]
    assert "megatron-core 0.11.0 is outside the releases the rules cover" in \
        inconclusive["detail"]["undecided"][0]["what"]
    assert doc["verdict"]["headline"].startswith("FAIL")


def test_a_baseline_row_without_an_id_is_bad_input(capsys, tmp_path, real_sources):
    doc = json.loads(BASELINE.read_text())
    del doc["sites"][3]["id"]
    broken = tmp_path / "baseline.json"
    broken.write_text(json.dumps(doc))
    assert cli.main(["gate", "--config", str(SEED), "--baseline", str(broken)]) == EXIT_INPUT
    assert "site #3 has no id" in capsys.readouterr().err


# --- headline and exit code agree -------------------------------------------------------------

@pytest.mark.parametrize("args, status", [
    (["--torch", "2.10.0"], "findings"),
    (["--torch", "2.11.0"], "clean"),
    (["--torch", "2.11.0a0"], "inconclusive"),
])
def test_text_headline_agrees_with_exit_code(capsys, real_sources, args, status):
    code = cli.main(["scan", "--config", str(SEED), *args])
    out = capsys.readouterr().out
    headline = out.splitlines()[4]
    assert headline.startswith(status.upper()), headline
    assert code == (EXIT_OK if status == "clean" else EXIT_FINDINGS)
