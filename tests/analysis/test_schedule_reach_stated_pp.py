"""Stage predicates are answered only from a pipeline size the run STATES (h30-review r7).

megatron-core's ModelParallelConfig default (pipeline_model_parallel_size=1,
megatron/core/model_parallel_config.py:28) and the guessed Megatron-LM parser's default are what the
rules assume where nothing says otherwise, not what the run does: a script that sets its pipeline
size in its own code (NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a
examples/conversion/hf_to_megatron_generate_text.py, `--pp` read by its own argparse) and meets
megatron-core's pipelined inference P2P (megatron/core/inference/communication_utils.py) may run at
PP 2. Only a flag the launch line gives (NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553
examples/inference/run_inference_server.sh:77 `--pipeline-model-parallel-size 1`) or `--set`
answers them; the checkout is the one of test_schedule_reach_stage_guard.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from auditor import cli
from auditor.analysis.schedule_reach import KIND
from tests.analysis.test_schedule_reach_stage_guard import _checkout

# run_inference_server.sh without its pipeline flag: the size is the parser's default, or the
# script's own code's.
UNSTATED_SH = """#!/bin/bash
# megatron-core==0.19.2 torch==2.11.0
torchrun --nproc-per-node 2 -m examples.inference.serve --tensor-model-parallel-size 2
"""


def _scan(capsys, monkeypatch, tmp_path: Path, *extra: str) -> dict:
    script = _checkout(tmp_path, "1")
    script.write_text(UNSTATED_SH, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    cli.main(["scan", "--config", str(script), "--format", "json", *extra])
    return json.loads(capsys.readouterr().out)


def test_default_pipeline_size_answers_no_stage_predicate(capsys, monkeypatch, tmp_path):
    doc = _scan(capsys, monkeypatch, tmp_path)
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] != "not-pipeline", head
    assert not any(f["kind"] == KIND for f in doc["findings"]), head


def test_set_pipeline_size_answers_them(capsys, monkeypatch, tmp_path):
    doc = _scan(capsys, monkeypatch, tmp_path, "--set", "pipeline_model_parallel_size=1")
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "not-pipeline", head
    assert "at pipeline_model_parallel_size=1, as --set gives it" in head, head
