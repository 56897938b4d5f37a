"""Every `swift` subcommand that trains nothing is said to be so (issue 22 item 11), not a command
that "could not be followed". ms-swift 4.3.0 swift/cli/main.py ROUTE_MAPPING lists eval,
merge-lora, web-ui, rollout, sample and app beside pt/sft/rlhf/infer/deploy/export.

EVAL is written after modelscope/ms-swift examples/eval/vlm/eval.sh (commit
3602360a562313afbf2ef6065fdf61f271a2c5b9): `CUDA_VISIBLE_DEVICES=0 MAX_PIXELS=... swift eval ...`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli

EVAL = """CUDA_VISIBLE_DEVICES=0 \\
MAX_PIXELS=1003520 \\
swift {sub} \\
    --model Qwen/Qwen2.5-VL-3B-Instruct \\
    --infer_backend vllm
"""


@pytest.mark.parametrize("sub", ["eval", "merge-lora", "web-ui", "rollout", "sample", "app"])
def test_a_swift_subcommand_that_trains_nothing_is_no_pipeline_run(capsys, tmp_path: Path, sub: str) -> None:
    script = tmp_path / "eval.sh"
    script.write_text(EVAL.format(sub=sub), encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0
    assert doc["verdict"]["headline"].startswith(f"NOT A PIPELINE RUN: `swift {sub}`")
