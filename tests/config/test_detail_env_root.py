"""A debug level that code the audit cannot read may set is what an undecided DETAIL check rests
on: the step named is `--set env.TORCH_DISTRIBUTED_DEBUG=VALUE`, which states the level the
cluster's job runs with and decides the check, never `--set` of the derived torch_debug_wrapper.

The script is written after bigcode-project/Megatron-LM examples/finetune_starcoderplus.slurm
(commit 7c325cd34a): `source /admin/home/leandro/.bashrc` (line 11, a file of the cluster's home
directory) before a `python -m torch.distributed.run pretrain_gpt.py` with
--pipeline-model-parallel-size 4; `export TORCH_DISTRIBUTED_DEBUG=DETAIL` before the `source`, as
issue 22's DETAIL pass adds it after the script's leading comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from auditor import cli
from auditor.config.coerce import overrides_from
from auditor.config.derive import derive
from auditor.config.launch import parse_launch
from auditor.errors import EXIT_FINDINGS, EXIT_INPUT

SCRIPT = """#!/bin/bash
# megatron-core==0.17.0
export TORCH_DISTRIBUTED_DEBUG=DETAIL
set -x -e
source /admin/home/nobody-here/.bashrc
python -u -m torch.distributed.run --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \\
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --num-layers 8 \\
    --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 \\
    --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 16 --train-iters 10
"""
ROOT = "env.TORCH_DISTRIBUTED_DEBUG"
REPO = Path(__file__).resolve().parents[2]


def _derive(*sets: str):
    launch = parse_launch(SCRIPT, "run.sh")
    return derive(launch, {"megatron-core": "0.17.0"}, overrides_from(sets), "2.10.0")


def test_the_unread_source_leaves_the_debug_level_the_root() -> None:
    config = _derive()
    assert "torch.detail-unbatches: unknown env.TORCH_DISTRIBUTED_DEBUG" in config.undecided
    assert config.unknown_inputs["torch_batch_coalesces"] == [ROOT]
    assert config.unknown_inputs["torch_debug_wrapper"] == [ROOT]


@pytest.mark.parametrize("level, wrapped", [("DETAIL", True), ("detail", True), ("INFO", False), ("OFF", False)])
def test_set_env_states_the_level_the_job_runs_with(level: str, wrapped: bool) -> None:
    config = _derive(f"{ROOT}={level}")
    assert config.value("torch_debug_wrapper") is wrapped  # c10d upper-cases the level
    assert ("batch-runs-unbatched" in [f.kind for f in config.findings]) is wrapped
    assert not any(u.startswith("torch.detail-unbatches") for u in config.undecided)


def _scan(capsys, tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    script = tmp_path / "finetune.slurm"
    script.write_text(SCRIPT, encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--torch", "2.10.0", "--format", "json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else {}, err


@pytest.mark.wheels
def test_the_verdict_names_the_variable_and_the_set_decides_it(capsys, tmp_path: Path) -> None:
    code, doc, _ = _scan(capsys, tmp_path)
    assert doc["verdict"]["status"] == "inconclusive"
    decides = [u["decide"] for u in doc["verdict"]["undecided"] if "TORCH_DISTRIBUTED_DEBUG" in u["decide"]]
    assert decides and set(decides) == {f"--set {ROOT}=VALUE"}
    assert "torch_debug_wrapper=VALUE" not in json.dumps(doc["verdict"])
    assert doc["config"]["unknown_inputs"]["torch_debug_wrapper"] == [ROOT]
    jsonschema.validate(doc, json.loads((REPO / "docs/schema/scan-document.schema.json").read_text()))
    code, doc, _ = _scan(capsys, tmp_path, "--set", f"{ROOT}=DETAIL")
    assert code == EXIT_FINDINGS and doc["verdict"]["status"] == "findings"


def test_a_variable_no_rule_reads_is_refused(capsys, tmp_path: Path) -> None:
    code, _, err = _scan(capsys, tmp_path, "--set", "env.NO_SUCH_VARIABLE=1")
    assert code == EXIT_INPUT
    assert "env.NO_SUCH_VARIABLE" in err


def test_a_level_torch_rejects_is_refused(capsys, tmp_path: Path) -> None:
    code, _, err = _scan(capsys, tmp_path, "--set", f"{ROOT}=VERBOSE")
    assert code == EXIT_INPUT
    assert "OFF, INFO, DETAIL" in err and err.count("\n") == 1


@pytest.mark.wheels
def test_with_torch_not_stated_the_check_still_names_the_variable(capsys, tmp_path: Path) -> None:
    """No --torch: every covered release is judged. The check is undecided on the releases that
    have it because the level is unknown, and `--torch` alone does not decide it there (2.10.0
    still needs the level); the level does, on every release (where the releases then disagree,
    that is its own undecided line naming --torch). So the check names the variable, as the
    sites do: finetune_starcoderplus.slurm out of the box named `--torch X.Y.Z` first."""
    script = tmp_path / "finetune.slurm"
    script.write_text(SCRIPT.replace("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n", ""), encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["status"] == "inconclusive"
    check = [u for u in doc["verdict"]["undecided"] if u["what"].startswith("check torch.detail-unbatches")]
    assert [u["decide"] for u in check] == [f"--set {ROOT}=VALUE"]
    assert f"decide it with --set {ROOT}=VALUE" in doc["verdict"]["headline"]
