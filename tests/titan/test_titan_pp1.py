"""torchtitan at PP=1 has no pipeline: ParallelDims.pp_enabled is `pp > 1`, and the Trainer
builds and steps the schedule only `if parallel_dims.pp_enabled:` (torchtitan 0.2.2
torchtitan/train.py:218, 0.3.0 torchtitan/trainer.py:443; rules/torchtitan.toml
titan.builds-pipeline). A PP=1 launch reads no pipeline P2P (CLEAN, 0 reachable), as a
megatron PP=1 run does; PP=2 still reaches the schedule's stage ops.

The launches are run_train.sh's torchrun line (pytorch/torchtitan v0.2.2 73a0e697 and main
b5bcd76c, run_train.sh) with `"$@"` spelled out; the TOML is the part of v0.2.2
torchtitan/models/llama3/train_configs/llama3_8b.toml that the pipeline reads (its
`pipeline_parallel_degree = 1`); 0.3.0's llama3_8b registry function sets no PP degree (the
release's default, ParallelismConfig.pipeline_parallel_degree = 1)."""

from __future__ import annotations

import pytest

from auditor.scan import ScanInputs, run_scan
from tests.titan.test_titan_config import registry_launch, toml_launch

pytestmark = pytest.mark.wheels


def scan(path: str, release: str) -> dict:
    return run_scan(ScanInputs(path, targets=[f"torchtitan=={release}", "torch"],
                               torch_version="2.10.0", jobs=1))


def reached(doc: dict) -> list[str]:
    return [s["id"] for s in doc["sites"] if s.get("reachable") == "yes"]


@pytest.mark.parametrize("release,overrides,guard", [
    ("0.2.2", "", "torchtitan/train.py:218"),
    ("0.2.2", "--parallelism.pipeline_parallel_degree 1", "torchtitan/train.py:218"),
    ("0.3.0", "", "torchtitan/trainer.py:443"),
])
def test_pp1_builds_no_pipeline_and_reads_clean(tmp_path, release, overrides, guard):
    path = (toml_launch(tmp_path, overrides) if release == "0.2.2"
            else registry_launch(tmp_path, "llama3", "llama3_8b", overrides))
    doc = scan(path, release)
    assert doc["config"]["effective"]["titan_builds_pipeline"] is False
    assert reached(doc) == []
    assert doc["verdict"]["status"] == "clean", doc["verdict"]["headline"]
    assert doc["entries"] == []
    assert any("titan_builds_pipeline" in n and guard in n for n in doc["config"]["notes"]), \
        doc["config"]["notes"]


def test_pp2_still_reaches_the_schedule(tmp_path):
    doc = scan(toml_launch(tmp_path, "--parallelism.pipeline_parallel_degree 2"), "0.2.2")
    assert doc["config"]["effective"]["titan_builds_pipeline"] is True
    assert doc["entries"] == ["torchtitan pipeline schedule"]
    assert any("pipelining.stage." in s for s in reached(doc)), reached(doc)
