"""`python3 -m verl.trainer.main_generation` generates sequences; it trains nothing (issue 22
items 9 and 11). Its main_generation.py starts verl's FSDP ActorRolloutRefWorker in the rollout
role only (`from verl.workers.fsdp_workers import ActorRolloutRefWorker`, `role="rollout"`), so
no Megatron pipeline schedule runs: NOT A PIPELINE RUN (rules/verl.toml [[entry_module]]).

The launch follows volcengine/verl (commit b178a3cd56) examples/generation/run_deepseek7b_mutli_node.sh.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli, rulebook

GENERATION = """set -x

data_path=$HOME/data/rlhf/gsm8k/test.parquet
model_path=deepseek-ai/deepseek-llm-7b-chat

python3 -m verl.trainer.main_generation \\
    trainer.nnodes=2 \\
    trainer.n_gpus_per_node=8 \\
    data.path=$data_path \\
    model.path=$model_path\\
    +model.trust_remote_code=True \\
    rollout.tensor_model_parallel_size=16 \\
    rollout.gpu_memory_utilization=0.8
"""


def test_verl_generation_is_not_a_pipeline_run(capsys, tmp_path):
    script = tmp_path / "run_deepseek7b_mutli_node.sh"
    script.write_text(GENERATION, encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["status"] == "not-pipeline", doc["verdict"]["headline"]
    assert code == 0
    assert "verl.trainer.main_generation" in doc["verdict"]["headline"]


def test_main_ppo_is_not_taken_for_generation(capsys, tmp_path):
    """Fail closed: the training entry of the same package is not said to be no pipeline run."""
    script = tmp_path / "run.sh"
    script.write_text(GENERATION.replace("main_generation", "main_ppo"), encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json"])
    out = capsys.readouterr().out
    assert not out or json.loads(out)["verdict"]["status"] != "not-pipeline"


@pytest.mark.wheels
def test_each_checked_release_generates_with_fsdp_rollout_workers_only(release):
    entry = next(e for e in rulebook.load("verl").data["entry_module"]
                 if "verl.trainer.main_generation" in e["modules"])
    path = entry["source"].split()[1].partition(":")[0]
    for version in entry["checked"]:
        root = Path(release(f"verl=={version}").root)
        text = next(root.rglob(path)).read_text(encoding="utf-8")
        assert entry["code"] in text, version
        assert "from verl.workers.fsdp_workers import ActorRolloutRefWorker" in text, version
        assert "megatron" not in text.lower(), version
