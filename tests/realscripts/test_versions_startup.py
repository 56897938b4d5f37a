"""Issue 22 item 7: the P2P verdict rests only on what bears on P2P. Start-up checks that the
run's sizes decide trivially are decided (heads divisible by TP=1, layers split evenly over
PP=1, experts over EP=1); start-up checks left undecided are listed in their own section and do
not make the P2P verdict INCONCLUSIVE; what decides each names the real input (`--set
num_layers=VALUE`), never a value derived from it (pipeline_middle_layers).

Scripts written after modelscope/ms-swift @ 3602360a5 examples/megatron/sft.sh (TP=2, PP=1:
`megatron sft --model Qwen/Qwen2.5-7B-Instruct --tensor_model_parallel_size 2 ...`) and
examples/megatron/moe/moe.sh (`--pipeline_model_parallel_size 2
--decoder_last_pipeline_num_layers 11 --expert_model_parallel_size 4`).
"""

from __future__ import annotations

import pytest
import json
import subprocess
import sys
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
STACK = ["--target", "ms-swift==4.3.0", "--target", "mcore-bridge==1.4.1",
         "--target", "megatron-core==0.17.0", "--torch", "2.11.0"]
SFT = """\
# 2 * 80GiB
PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' \\
NPROC_PER_NODE=2 \\
CUDA_VISIBLE_DEVICES=0,1 \\
megatron sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --dataset 'AI-ModelScope/alpaca-gpt4-data-zh#500' \\
    {sizes} \\
    --micro_batch_size 16 \\
    --global_batch_size 32 \\
    --output_dir megatron_output/Qwen2.5-7B-Instruct
"""


def scan(tmp_path: Path, sizes: str, *extra: str) -> tuple[int, dict, str]:
    script = tmp_path / "sft.sh"
    script.write_text(SFT.format(sizes=sizes))
    argv = [sys.executable, "-m", "auditor", "scan", "--config", str(script), *STACK, *extra]
    doc = subprocess.run([*argv, "--format", "json"], check=False, capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    text = subprocess.run(argv, check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    return doc.returncode, json.loads(doc.stdout), text.stdout


@pytest.mark.heavy
def test_checks_that_tp1_pp1_ep1_decide_are_decided(tmp_path):
    code, doc, _ = scan(tmp_path, "--tensor_model_parallel_size 1")
    assert code == 0 and doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert "startup_undecided" not in doc["verdict"]
    assert not [u for u in doc["config"]["undecided"]
                if u.split(":")[0] in ("mcore.heads-divisible-by-tp", "mcore.even-split",
                                       "mcore.experts-divisible-by-ep")]


@pytest.mark.heavy
def test_an_undecided_startup_check_is_its_own_section_not_the_verdict(tmp_path):
    code, doc, text = scan(tmp_path, "--tensor_model_parallel_size 2")
    verdict = doc["verdict"]
    assert code == 0 and verdict["status"] == "clean" and verdict["undecided"] == []
    assert [u["what"].split(":")[0] for u in verdict["startup_undecided"]] == \
        ["check mcore.heads-divisible-by-tp"]
    assert verdict["startup_undecided"][0]["decide"] == "--set num_attention_heads=VALUE"
    assert verdict["headline"].startswith("CLEAN:")
    assert "Start-up checks not decided" in text
    schema = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)


@pytest.mark.heavy
def test_a_derived_unknown_is_decided_by_its_inputs(tmp_path):
    code, doc, _ = scan(tmp_path, "--pipeline_model_parallel_size 2 "
                                  "--decoder_last_pipeline_num_layers 11 --expert_model_parallel_size 1")
    steps = [u["decide"] for u in doc["verdict"].get("startup_undecided", [])]
    assert "--set num_layers=VALUE" in steps
    assert not [s for s in steps if "pipeline_middle" in s]
    assert code == 0, doc["verdict"]["headline"]


@pytest.mark.heavy
def test_a_startup_check_that_holds_is_still_a_finding(tmp_path):
    code, doc, _ = scan(tmp_path, "--tensor_model_parallel_size 3", "--set", "num_attention_heads=28")
    assert code == 1 and doc["verdict"]["status"] == "findings"
    assert any(f["detail"].get("rule") == "mcore.heads-divisible-by-tp" for f in doc["findings"])
