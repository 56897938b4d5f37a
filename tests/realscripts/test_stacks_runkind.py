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


ASCEND = """PYTORCH_NPU_ALLOC_CONF='expandable_segments:True' \\
NPROC_PER_NODE=4 \\
megatron sft \\
    --model Qwen/Qwen3-4B \\
    --tensor_model_parallel_size 2 \\
    --pipeline_model_parallel_size 2
"""


def test_an_ascend_run_is_seen_and_never_clean(tmp_path):
    """modelscope/ms-swift examples/ascend/megatron/train_sft_full.sh (commit 2d3694fb18): its only
    sign of an NPU run is torch_npu's PYTORCH_NPU_ALLOC_CONF. The schedule's order is analysed,
    but how HCCL runs the batched ops is outside the rules: not CLEAN, and the headline names
    the run's backend, not NCCL."""
    from auditor.analysis.verdict import judge
    from auditor.config.launch import parse_launch

    launch = parse_launch(ASCEND, "train_sft_full.sh")
    (backend,) = [d for d in launch.diagnostics if d.kind == "launch.backend"]
    assert backend.detail["backend"] == "hccl"
    site = {"path": "p.py", "line": 1, "api": "isend", "function": "f", "verdict": "ok",
            "reachable": "yes", "paths": [["a", "f"]], "runs_batched": True}
    doc = {"sites": [site], "findings": [backend.to_json()],
           "config": {"effective": {"batch_p2p_comm": True, "pipeline_model_parallel_size": 2,
                                    "distributed_backend": "hccl"}}}
    result = judge(doc)
    assert result.status == "not-covered" and result.exit_code == 1
    assert result.headline.startswith("NOT COVERED: This run uses Ascend NPUs")
    assert result.undecided[-1].decide.startswith("`p2paudit record`")
    # `--set distributed_backend=nccl`: the user says the run is on NCCL after all
    doc["config"]["effective"]["distributed_backend"] = "nccl"
    assert judge(doc).status == "clean"
