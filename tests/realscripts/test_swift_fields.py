"""ms-swift's flags are its release's dataclass fields (rules/ms-swift.toml `args_classes`,
[unknown_flags]; config/frontends/swift_fields.py), checked on the releases themselves, and a
flag no field defines is a run that does not start.

The launch reproduces modelscope/ms-swift@3602360a56 examples/megatron/sft.sh (`NPROC_PER_NODE=2
megatron sft --model ... --dataset ...`) with `--pipeline_model_parallel_size 2` misspelt
`--pipline_model_parallel_size 2` and TORCH_DISTRIBUTED_DEBUG=DETAIL exported: ms-swift raises
on the remaining argv (swift/pipelines/base.py:35-40) on every rank before training; before, it
was read as PP 1 and CLEAN, 0 sites, on torch 2.10.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.config.frontends.swift_fields import dataclass_front_end
from auditor.rulebook import files

ROOT = Path(__file__).resolve().parents[2]
RULES = files.load("ms-swift").data
LAUNCH = """export TORCH_DISTRIBUTED_DEBUG=DETAIL
NPROC_PER_NODE=2 \\
megatron sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --dataset AI-ModelScope/alpaca-gpt4-data-en \\
    FLAG 2 \\
    --train_iters 10
"""


@pytest.mark.parametrize("version", RULES["unknown_flags"]["checked"])
def test_each_args_class_is_read_whole_and_the_pipeline_raises(version, release):
    root = release(f"ms-swift=={version}").root
    source, _, line = RULES["unknown_flags"]["source"].partition(":")
    text = (root / source).read_text().splitlines()
    assert RULES["unknown_flags"]["code"] in text[int(line) - 1]
    assert "return_remaining_strings=True" in (root / "swift/utils/utils.py").read_text()
    pipelines = "\n".join(p.read_text() for p in (root / "swift/megatron/pipelines/train").glob("*.py"))
    megatron = next(e for e in RULES["launcher"] if e.get("program") == "megatron")
    for name in megatron["args_classes"].values():
        assert f"args_class = {name}" in pipelines
        front = dataclass_front_end(root, name, f"ms-swift {version}")
        assert front is not None and front.complete, front and front.why_incomplete
        assert {"--pipeline_model_parallel_size", "--ignore_args_error"} <= set(front.flags)
    diverts, _, at = RULES["unknown_flags"]["diverts_source"].partition(":")
    if version != "4.1.0":  # no ray pipeline before 4.3.0
        assert RULES["unknown_flags"]["diverts_code"] in (root / diverts).read_text().splitlines()[int(at) - 1]
        assert f"{megatron['routes']['rlhf'].replace('.', '/')}.py" == diverts


def scan(tmp_path: Path, flag: str, *target: str) -> dict:
    script = tmp_path / "sft.sh"
    script.write_text(LAUNCH.replace("FLAG", flag))
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), "--torch",
                           "2.10.0", "--format", "json", *target], check=False, capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.usefixtures("release")
def test_a_misspelt_pipeline_size_does_not_start(tmp_path):
    doc = scan(tmp_path, "--pipline_model_parallel_size", "--target", "ms-swift==4.6.0")
    assert doc["verdict"]["headline"].startswith("DOES NOT START: `--pipline_model_parallel_size` does not exist")
    [error] = [f for f in doc["findings"] if f["kind"] == "launch.megatron-spelling"]
    assert error["severity"] == "error" and error["where"].endswith("sft.sh:6")
    assert error["detail"]["closest"] == "--pipeline_model_parallel_size"
    # no release stated: ms-swift 3.x (older than the rules cover) may define it
    unstated = scan(tmp_path, "--pipline_model_parallel_size")
    head = unstated["verdict"]["headline"]
    assert head.startswith("INCONCLUSIVE") and "--pipline_model_parallel_size" in head, head
    assert "--target ms-swift==VERSION" in head
    right = scan(tmp_path, "--pipeline_model_parallel_size")
    assert not [f for f in right["findings"] if f["kind"] == "launch.megatron-spelling"]
    assert right["verdict"]["headline"].startswith("FINDINGS")
