"""Several settings the script leaves unknown, judged together: a case of the pipeline size that
stays undecided on batch_p2p_comm is judged at both of its values (the product only where a case
is undecided), decided where every case agrees, with each setting judged over in the headline;
where the values disagree (DETAIL on torch 2.10), INCONCLUSIVE naming the one --set.

The script reproduces alibaba/Pai-Megatron-Patch examples/codellama/run_finetune_megatron_llama.sh
(commit a098ca5acbdeaf7172ce0393fa309b39a77506db): `TP=${11}`, `PP=${12}` positional, option
strings set in `if [ $DO = true ]` branches on positional arguments, the whole command in
`run_cmd="torchrun $DISTRIBUTED_ARGS finetune_megatron_llama.py ${megatron_options} ..."` run by
`eval ${run_cmd}`, whose trainer is not a Megatron-LM pretrain_*.py the rules read (its Megatron
checkout comes from the caller's $2): what its front end derives (batch_p2p_comm among them) is
unknown. The settings no case split here (the virtual pipeline, overlap_p2p_comm, the backend,
variable_seq_lengths, which would double the scans) are given with --set, as the INCONCLUSIVE of
the unsplit run asks.
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
set -e
MEGATRON_PATCH_PATH=$2
export PYTHONPATH=${{MEGATRON_PATCH_PATH}}/Megatron-LM-231007:${{MEGATRON_PATCH_PATH}}:$PYTHONPATH
DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes 1 --node_rank 0 --master_addr localhost --master_port 6000"
TP=${{11}}
PP=${{12}}
DO=${{14}}
if [ $DO = true ]; then
    do_options=" \\
            --use-distributed-optimizer"
elif [ $DO = false ]; then
    do_options=" \\
                    "
fi
megatron_options="  \\
        --num-layers 32 \\
        --hidden-size 4096 \\
        --num-attention-heads 32 \\
        --seq-length 2048 \\
        --micro-batch-size 1 \\
        --tensor-model-parallel-size ${{TP}} \\
        --pipeline-model-parallel-size ${{PP}} \\
        --bf16"
run_cmd="torchrun $DISTRIBUTED_ARGS finetune_megatron_llama.py
 ${{megatron_options}} ${{do_options}}"
echo ${{run_cmd}}
eval ${{run_cmd}}
"""

# the entry is read (an entry not found is INCONCLUSIVE on its own, entry_stack.unread_entry): a
# script on megatron whose front end no rule reads, as the Pai script's was
ENTRY = ("from megatron.core.pipeline_parallel import get_forward_backward_func\n"
         "get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=None,\n"
         "                            num_microbatches=1, seq_length=1, micro_batch_size=1)\n")
GIVEN = {"virtual_pipeline_model_parallel_size": "none", "overlap_p2p_comm": "false",
         "distributed_backend": "nccl", "variable_seq_lengths": "false"}


def scan(tmp_path: Path, torch: str, detail: str) -> dict:
    script = tmp_path / "run_finetune_megatron_llama.sh"
    script.write_text(SCRIPT.format(torch=torch, detail=detail))
    (tmp_path / "finetune_megatron_llama.py").write_text(ENTRY)
    doc = run_scan(ScanInputs(str(script), overrides=dict(GIVEN), jobs=1))
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(json.dumps(doc, default=str)))
    return doc


@pytest.mark.heavy
def test_two_unknown_settings_judged_together_decide_where_every_case_agrees(tmp_path):
    doc = scan(tmp_path, "2.13.0", "")
    verdict = doc["verdict"]
    assert verdict["status"] == "clean", verdict["headline"]
    assert "Holds for any pipeline_model_parallel_size and batch_p2p_comm (" in verdict["headline"]
    basis = doc["config"]["setting_basis"]
    assert [(c["value"], c["status"]) for c in basis["cases"]] == [(1, "clean"), (2, "clean"), (4, "clean")]
    # PP 1 sends nothing: decided without batch_p2p_comm; PP 2 and 4 are judged at both values.
    assert "split" not in basis["cases"][0]
    for case in basis["cases"][1:]:
        assert case["split"]["key"] == "batch_p2p_comm"
        assert [(c["value"], c["status"]) for c in case["split"]["cases"]] == [(False, "clean"), (True, "clean")]


@pytest.mark.heavy
def test_a_setting_the_verdict_depends_on_stays_inconclusive_naming_its_set(tmp_path):
    doc = scan(tmp_path, "2.10.0", "export TORCH_DISTRIBUTED_DEBUG=DETAIL")
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive", verdict["headline"]
    first = verdict["undecided"][0]
    assert first["decide"] == "--set batch_p2p_comm=false|true (the run's batch_p2p_comm)"
    assert "batch_p2p_comm=True reads FINDINGS" in first["what"]
    assert "batch_p2p_comm=False reads CLEAN" in first["what"]


@pytest.mark.heavy
def test_a_case_left_undecided_names_its_own_step(tmp_path):
    """No torch stated (every release judged) and the backend unknown (the front end unread):
    at batch_p2p_comm=True whether torch coalesces rests on the backend, which no case splits;
    the step is its --set, not --torch (every torch release was judged already) nor the --set of
    the pipeline size (no value of it decides)."""
    script = tmp_path / "run_finetune_megatron_llama.sh"
    script.write_text(SCRIPT.format(torch="X", detail="").replace("# torch==X\n", ""))
    (tmp_path / "finetune_megatron_llama.py").write_text(ENTRY)
    given = {k: v for k, v in GIVEN.items() if k != "distributed_backend"}
    doc = run_scan(ScanInputs(str(script), overrides=given, jobs=1))
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive", verdict["headline"]
    assert verdict["undecided"][0]["decide"] == "--set distributed_backend=VALUE", verdict["headline"]
    basis = doc["config"]["setting_basis"]
    assert [(c["value"], c["status"]) for c in basis["cases"]] == [
        (1, "clean"), (2, "inconclusive"), (4, "inconclusive")]
    assert [(c["value"], c["status"]) for c in basis["cases"][1]["split"]["cases"]] == [
        (False, "clean"), (True, "inconclusive")]
    assert "batch_p2p_comm=True" in doc["config"]["provenance"]["batch_p2p_comm"]
