"""A setting the verdict depends on that the script leaves to its caller is judged at each value
class it can take (PP 1, 2 and more): decided where all agree, INCONCLUSIVE naming `--set` where
they do not.

The script reproduces alibaba/Pai-Megatron-Patch examples/deepseek_v3/run_mcore_deepseek.sh
(commit a098ca5acbdeaf7172ce0393fa309b39a77506db): `PP=${11}`, a positional argument, put into
the string `megatron_options="... --pipeline-model-parallel-size ${PP} ..."`, and
`run_cmd="torchrun $DISTRIBUTED_ARGS pretrain_deepseek.py ${megatron_options} ..."; eval ${run_cmd}`.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from auditor.scan import ScanInputs, run_scan

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs/schema/scan-document.schema.json").read_text())

SCRIPT = """#!/bin/bash
# megatron-core==0.17.0
# torch=={torch}
{detail}
TP=1
PP=${{11}}
DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes 1"
megatron_options="  \\
        --num-layers 8 \\
        --hidden-size 1024 \\
        --num-attention-heads 16 \\
        --seq-length 1024 \\
        --max-position-embeddings 1024 \\
        --micro-batch-size 1 \\
        --global-batch-size 16 \\
        --tensor-model-parallel-size ${{TP}} \\
        --pipeline-model-parallel-size ${{PP}} \\
        --bf16"
run_cmd="torchrun $DISTRIBUTED_ARGS pretrain_gpt.py ${{megatron_options}}"
echo ${{run_cmd}}
eval ${{run_cmd}}
"""


@pytest.mark.parametrize("torch,detail,status", [
    ("2.13.0", "", "clean"),  # no value of PP gives a contradiction
    ("2.10.0", "export TORCH_DISTRIBUTED_DEBUG=DETAIL", "inconclusive"),  # PP 1 clean, PP > 1 not
])
def test_an_unknown_pipeline_size_is_judged_at_each_value_class(tmp_path, torch, detail, status):
    script = tmp_path / "run_mcore_deepseek.sh"
    script.write_text(SCRIPT.format(torch=torch, detail=detail))
    doc = run_scan(ScanInputs(str(script), jobs=1))
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(json.dumps(doc, default=str)))
    verdict = doc["verdict"]
    assert verdict["status"] == status, verdict["headline"]
    basis = doc["config"]["setting_basis"]
    assert basis["key"] == "pipeline_model_parallel_size"
    assert [c["value"] for c in basis["cases"]] == [1, 2, 4]
    if status == "clean":
        assert "holds for any pipeline_model_parallel_size" in verdict["headline"].lower()
        assert {c["status"] for c in basis["cases"]} == {"clean"}
    else:
        assert [c["status"] for c in basis["cases"]] == ["clean", "findings", "findings"]
        first = verdict["undecided"][0]
        assert first["decide"].startswith("--set pipeline_model_parallel_size=")
        assert "pipeline_model_parallel_size=1 reads CLEAN" in first["what"]


def test_a_stated_pipeline_size_is_not_varied(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT.format(torch="2.13.0", detail="").replace("${{11}}", "2").replace("${11}", "2"))
    doc = run_scan(ScanInputs(str(script), jobs=1))
    assert "setting_basis" not in doc["config"]
    assert doc["verdict"]["status"] == "clean"


def test_a_caller_planning_from_its_own_read_gets_the_unknown_run(tmp_path):
    """simulate and fix pass the config they read and plan from it: they get the run as read
    (PP unknown, undecided), never one case's document standing in for it."""
    from auditor.scan import read_config

    script = tmp_path / "run_mcore_deepseek.sh"
    script.write_text(SCRIPT.format(torch="2.13.0", detail=""))
    doc = run_scan(ScanInputs(str(script), jobs=1), read_config(str(script), None))
    assert "setting_basis" not in doc["config"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == "unknown"
