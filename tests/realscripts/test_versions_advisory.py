"""Issue 22 item 7: a warning check left undecided does not make the P2P verdict INCONCLUSIVE.

A [[check]] of severity warning or info, holding, adds a warning beside the verdict and never
changes it; undecided, it leaves open only whether the warning shows. It is listed in its own
section (`advisory_undecided`), like an undecided start-up check.

The construct follows volcengine/verl @ b178a3cd56 examples/grpo_trainer/
run_qwen3-235b_megatron_96gb.sh:14, `[ -f "${SCRIPT_DIR}/env.sh" ] && source "${SCRIPT_DIR}/env.sh"`:
a file that may set any variable (here TORCH_NCCL_USE_COMM_NONBLOCKING, which decides the
torch.lazy-init-unbounded warning), written in an ms-swift launch after examples/megatron/moe/moe.sh.
"""

from __future__ import annotations

import pytest
import json
import subprocess
import sys
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
# ms-swift 4.x takes the layer count from the model's config.json (Qwen2.5-7B-Instruct: 28) and has no
# `--num_layers` (3.x's; ms-swift 4.3.0's HfArgumentParser leaves it and swift/pipelines/base.py:40
# raises before training): `--set` gives it, deciding the even-split start-up check
STACK = ["--target", "ms-swift==4.3.0", "--target", "mcore-bridge==1.4.1",
         "--target", "megatron-core==0.17.0", "--set", "num_layers=28", "--torch", "2.11.0"]
SCRIPT = """\
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ -f "${SCRIPT_DIR}/env.sh" ] && source "${SCRIPT_DIR}/env.sh"
NPROC_PER_NODE=4 \\
CUDA_VISIBLE_DEVICES=0,1,2,3 \\
megatron sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --dataset 'AI-ModelScope/alpaca-gpt4-data-zh#500' \\
    --tensor_model_parallel_size 1 \\
    --pipeline_model_parallel_size 2 \\
    --micro_batch_size 1 \\
    --global_batch_size 16 \\
    --output_dir megatron_output/Qwen2.5-7B-Instruct
"""


def scan(tmp_path: Path, script: str) -> tuple[int, dict, str]:
    path = tmp_path / "train.sh"
    path.write_text(script)
    argv = [sys.executable, "-m", "auditor", "scan", "--config", str(path), *STACK]
    doc = subprocess.run([*argv, "--format", "json"], check=False, capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    text = subprocess.run(argv, check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    return doc.returncode, json.loads(doc.stdout), text.stdout


@pytest.mark.heavy
def test_an_undecided_warning_check_is_listed_apart_and_the_verdict_is_decided(tmp_path):
    code, doc, text = scan(tmp_path, SCRIPT)
    verdict = doc["verdict"]
    assert code == 0 and verdict["status"] == "clean", verdict["headline"]
    assert [u["what"].split(":")[0] for u in verdict["advisory_undecided"]] == \
        ["check torch.lazy-init-unbounded"]
    assert "TORCH_NCCL_USE_COMM_NONBLOCKING" in json.dumps(doc["findings"]) or \
        "env.TORCH_NCCL_USE_COMM_NONBLOCKING" in verdict["advisory_undecided"][0]["what"]
    assert "Warnings: 1 check(s) not decided" in verdict["headline"]
    assert "Warnings not decided" in text
    schema = json.loads((ROOT / "docs/schema/scan-document.schema.json").read_text())
    jsonschema.validate(doc, schema)


@pytest.mark.heavy
def test_the_warning_shows_when_its_inputs_are_known(tmp_path):
    """Without the sourced file the check is decided: it holds, a warning beside CLEAN."""
    code, doc, _ = scan(tmp_path, SCRIPT.replace('[ -f "${SCRIPT_DIR}/env.sh" ] && source '
                                                 '"${SCRIPT_DIR}/env.sh"\n', ""))
    assert code == 0 and doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert "advisory_undecided" not in doc["verdict"]
    assert any(f["kind"] == "lazy-init-unbounded" for f in doc["findings"])


@pytest.mark.heavy
def test_an_undecided_error_check_still_decides_nothing(tmp_path):
    """Only warnings are set apart: DETAIL from the sourced file can still un-batch on 2.10."""
    code, doc, _ = scan(tmp_path, SCRIPT)
    argv = [sys.executable, "-m", "auditor", "scan", "--config", str(tmp_path / "train.sh"),
            *STACK[:-1], "2.10.0", "--format", "json"]
    out = subprocess.run(argv, check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    verdict = json.loads(out.stdout)["verdict"]
    assert out.returncode == 1 and verdict["status"] == "inconclusive", verdict["headline"]
