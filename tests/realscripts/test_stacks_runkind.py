"""Issue 22 items 10-11: a run that is no pipeline run, and a valid script whose command cannot be
followed, are verdicts of their own: `scan --format json` writes a whole document for each, valid
against docs/schema/scan-document.schema.json, with the launch's findings and its exit status.

EXPORT is written after modelscope/ms-swift examples/megatron/export/full.sh (commit
2d3694fb1862b83a9633a95c5a51607b07198034): `NPROC_PER_NODE=4 megatron export ... --to_mcore true`.
HIDDEN runs its training command from a file the script writes at run time, as
NVIDIA/Megatron-LM examples/... launchers that `bash $RUN_SCRIPT` do (nothing to follow statically).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from auditor import cli
from auditor.analysis.verdict import RUN_VERDICTS

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())

EXPORT = """# safetensors -> torch_dist
CUDA_VISIBLE_DEVICES=0,1,2,3 \\
NPROC_PER_NODE=4 \\
megatron export \\
    --model Qwen/Qwen3-30B-A3B-Instruct-2507 \\
    --to_mcore true \\
    --pipeline_model_parallel_size 2
"""

HIDDEN = """RUN_SCRIPT=$(mktemp)
echo "torchrun pretrain_gpt.py --pipeline-model-parallel-size 4" > $RUN_SCRIPT
$LAUNCHER $RUN_SCRIPT
"""


def _scan(capsys, tmp_path: Path, text: str) -> tuple[int, dict]:
    script = tmp_path / "run.sh"
    script.write_text(text, encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_not_a_pipeline_run_is_a_whole_document(capsys, tmp_path):
    code, doc = _scan(capsys, tmp_path, EXPORT)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert "not-pipeline" in RUN_VERDICTS
    assert doc["verdict"]["status"] == "not-pipeline" and code == doc["verdict"]["exit_code"] == 0
    assert doc["verdict"]["headline"].startswith("NOT A PIPELINE RUN: `megatron export`")
    assert doc["launch"]["launcher"] == "megatron export"
    assert any(f["kind"] == "launch.not-pipeline" for f in doc["findings"])
    assert doc["sites"] == []


def test_a_command_not_followed_is_a_whole_inconclusive_document(capsys, tmp_path):
    code, doc = _scan(capsys, tmp_path, HIDDEN)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["verdict"]["status"] == "inconclusive" and code == doc["verdict"]["exit_code"] == 1
    (undecided,) = doc["verdict"]["undecided"]
    assert "could not be followed" in undecided["what"]
    assert undecided["decide"].startswith("--command '")
