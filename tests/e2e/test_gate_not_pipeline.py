"""`gate` on a launch script that is no pipeline run: nothing to compare, so it passes (exit 0)
with the run's NOT A PIPELINE RUN headline, in text and in JSON; a misspelt `--set` key is still
bad input. Before, the gate stopped with exit 2 ("not a pipeline run"), failing a CI job that
gates every script of a folder. The script reproduces ms-swift's HF-trainer examples
(modelscope/ms-swift@3602360a56 examples/train/multi-gpu/deepspeed/train_zero2.sh: `swift sft
... --deepspeed zero2`)."""

from __future__ import annotations

import json
from pathlib import Path

from auditor.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """#!/bin/bash
# ms-swift==4.3.0
NPROC_PER_NODE=2 CUDA_VISIBLE_DEVICES=0,1 swift sft --model Qwen/Qwen2.5-7B-Instruct \\
    --train_type full --dataset AI-ModelScope/alpaca-gpt4-data-en --deepspeed zero2
"""


def _baseline(tmp_path: Path, capsys) -> tuple[Path, Path]:
    script = tmp_path / "train_zero2.sh"
    script.write_text(SCRIPT)
    baseline = tmp_path / "base.json"
    assert cli_main(["scan", "--config", str(script), "--format", "json", "-o", str(baseline)]) == 0
    capsys.readouterr()
    return script, baseline


def test_gate_passes_a_run_that_is_no_pipeline_run(tmp_path, capsys):
    script, baseline = _baseline(tmp_path, capsys)
    status = cli_main(["gate", "--config", str(script), "--baseline", str(baseline),
                       "--target", "ms-swift==4.3.0"])
    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith(f"p2paudit gate {script}")
    assert "NOT A PIPELINE RUN: `swift sft` trains with ms-swift's Hugging Face Trainer" in out


def test_gate_json_is_the_run_document(tmp_path, capsys):
    script, baseline = _baseline(tmp_path, capsys)
    status = cli_main(["gate", "--config", str(script), "--baseline", str(baseline),
                       "--target", "ms-swift==4.3.0", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 0
    assert doc["verdict"]["status"] == "not-pipeline" and doc["sites"] == []


def test_gate_still_names_a_misspelt_set_key(tmp_path, capsys):
    script, baseline = _baseline(tmp_path, capsys)
    status = cli_main(["gate", "--config", str(script), "--baseline", str(baseline),
                       "--target", "ms-swift==4.3.0", "--set", "pipline_model_parallel_size=2"])
    err = capsys.readouterr().err
    assert status == 2 and "did you mean pipeline_model_parallel_size?" in err


def test_gate_fails_where_the_baseline_judged_pipeline_sites(tmp_path, capsys):
    """A baseline that judged P2P sites of this script, and a new scan that reads it as no
    pipeline run: every site is dropped unexamined, so the gate fails (h32-review1: a wrong
    NOT A PIPELINE RUN on the new scan passed the gate)."""
    script, baseline = _baseline(tmp_path, capsys)
    doc = json.loads(baseline.read_text())
    shipped = json.loads((ROOT / "ci" / "baseline" / "glm5_1_lora_pp4.megatron-core-0.17.0.json").read_text())
    doc["sites"] = shipped["sites"][:2]
    doc["verdict"] = {**doc["verdict"], "status": "inconclusive"}
    baseline.write_text(json.dumps(doc))
    status = cli_main(["gate", "--config", str(script), "--baseline", str(baseline),
                       "--target", "ms-swift==4.3.0"])
    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL: the baseline judged 2 P2P site(s) of this script (inconclusive)" in out


def test_gate_sarif_is_a_sarif_log_with_the_verdict(tmp_path, capsys):
    """--format sarif -o FILE writes SARIF, not the text headline (h32-review1)."""
    script, baseline = _baseline(tmp_path, capsys)
    out = tmp_path / "gate.sarif"
    status = cli_main(["gate", "--config", str(script), "--baseline", str(baseline),
                       "--target", "ms-swift==4.3.0", "--format", "sarif", "-o", str(out)])
    log = json.loads(out.read_text())
    assert status == 0 and log["version"] == "2.1.0"
    assert all(r["level"] == "note" for r in log["runs"][0]["results"])
    verdict = log["runs"][0]["properties"]["verdict"]
    assert verdict["status"] == "not-pipeline" and verdict["headline"].startswith("NOT A PIPELINE RUN")
