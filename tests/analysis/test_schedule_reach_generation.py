"""A generation entry at PP > 1 is judged on the P2P it reaches, not on a training schedule it
never runs (analysis/schedule_reach.py `generation`, scan.py).

Written after NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a
examples/models/nemotron/nemotron_3/ultra/slurm_inference.sh (scripts/inference/text_generation.py
--pp 4): the entry generates with megatron-core's inference engine, whose
forward_pass_with_pipeline_parallel sends activations between stages with
megatron/core/inference/communication_utils.py recv_from_prev_pipeline_rank_ /
send_to_next_pipeline_rank, each `batch_isend_irecv([one_op])`; it never calls
get_forward_backward_func. Before, the rules' entry point (a training step, forward_only=False)
made the 1F1B schedule's _batched_p2p_ops sites count as reached: INCONCLUSIVE on the backend,
and under TORCH_DISTRIBUTED_DEBUG=DETAIL on torch 2.10 a FINDINGS for batches the run never
issues. The entry here calls those two functions of the real megatron-core 0.19.2 release, and
prints its results as text_generation.py:114-122 does (a loop over literal pairs naming the
attributes it reads: static/interp/statements.py `_literal_rows`, without which the walk is
uncertain). An entry that also runs the schedule, or issues a batch built at run time, is
judged as before (fail closed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from auditor import cli, rulebook

LAUNCH = """#!/bin/bash
# megatron-core==0.19.2 torch=={torch}
{detail}torchrun --nproc-per-node 2 generate.py --pipeline-model-parallel-size 2
"""
GENERATE = """import torch

from megatron.core.inference.communication_utils import recv_from_prev_pipeline_rank_, send_to_next_pipeline_rank
{imports}

def show(output):
    for label, attribute in (("Prompt log probs", "prompt_log_probs"), ("Generated", "generated_log_probs")):
        value = getattr(output, attribute, None)
        if value is not None:
            print(label, value)


def main():
    buffer = torch.empty(1)
    recv_from_prev_pipeline_rank_(buffer, None)
    send_to_next_pipeline_rank(buffer, None)
{extra}    show(buffer)


if __name__ == "__main__":
    main()
"""
SCHEDULE = ("from megatron.core.pipeline_parallel import get_forward_backward_func\n",
            "    get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=[], "
            "num_microbatches=1, seq_length=1, micro_batch_size=1, forward_only=False)\n")
BUILT = ("", "    ops = [torch.distributed.P2POp(torch.distributed.isend, buffer, 1)]\n"
             "    ops.append(torch.distributed.P2POp(torch.distributed.irecv, buffer, 1))\n"
             "    torch.distributed.batch_isend_irecv(ops)\n")
# a call the walk cannot resolve, named as a function that holds a P2P site of the release
UNRESOLVED = ("\n\ndef relay(stage):\n    stage.send_forward(stage)\n", "    relay(buffer)\n")


def _scan(capsys, monkeypatch, tmp_path: Path, detail: bool, imports: str = "", extra: str = "") -> dict:
    (tmp_path / "generate.py").write_text(GENERATE.format(imports=imports, extra=extra), encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(LAUNCH.format(torch="2.10.0" if detail else "2.11.0",
                                    detail="export TORCH_DISTRIBUTED_DEBUG=DETAIL\n" if detail else ""),
                      encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    # Megatron-LM's front end, guessed, leaves the schedule's settings unknown: given as
    # Bridge's inference entry leaves them (megatron-core's defaults, rules/megatron-bridge.toml
    # [entry_defaults]), and the backend its maybe_initialize_distributed names.
    cli.main(["scan", "--config", str(script), "--format", "json", "--set", "distributed_backend=nccl",
              "--set", "overlap_p2p_comm=false", "--set", "virtual_pipeline_model_parallel_size=None"])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("detail", [False, True])
def test_generation_entry_is_judged_on_what_it_reaches(capsys, monkeypatch, tmp_path, detail):
    doc = _scan(capsys, monkeypatch, tmp_path, detail)
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] == "clean", head
    reached = {s["function"] for s in doc["sites"] if s["reachable"] == "yes"}
    assert reached == {"recv_from_prev_pipeline_rank_", "send_to_next_pipeline_rank"}, reached
    assert all(s["verdict"] == "ok" for s in doc["sites"] if s["reachable"] == "yes")
    assert doc["entries"] == ["generate.py (its own code)"]
    one_way = doc["config"]["provenance"]["pipeline_exchanges_one_way"]
    assert "communication_utils.py" in one_way and "is one op" in one_way, one_way


@pytest.mark.parametrize("imports, extra", [SCHEDULE, BUILT, UNRESOLVED])
def test_an_entry_that_may_run_more_is_judged_as_before(capsys, monkeypatch, tmp_path, imports, extra):
    doc = _scan(capsys, monkeypatch, tmp_path, True, imports, extra)
    assert doc["entries"] != ["generate.py (its own code)"], doc["entries"]
    assert doc["verdict"]["status"] != "clean", doc["verdict"]["headline"]


BRIDGE = Path(os.environ.get("P2PAUDIT_MEGATRON_BRIDGE",
                             "/work/upstream/real_scripts/NVIDIA-NeMo+Megatron-Bridge@067f987df0"))


@pytest.mark.skipif(not BRIDGE.is_dir(), reason="the Megatron-Bridge checkout (benchmarks/real_scripts/fetch.py) is not here")
def test_generation_entry_rules_are_the_checkout_s():
    """rules/megatron-bridge.toml [generation_entry]: its `code` is at its `source` in the
    checkout read, and every style it names is a [[swift_script]] style of the same file."""
    data = rulebook.load("megatron-bridge").data
    entry = data["generation_entry"]
    path, _, line = entry["source"].split(" ", 1)[1].partition(":")
    assert (BRIDGE / path).read_text(encoding="utf-8").splitlines()[int(line) - 1].strip() == entry["code"]
    assert set(entry["styles"]) <= {s["style"] for s in data["swift_script"]}
