"""auditor.repro.launch: a reproducer this machine cannot run is refused before anything starts,
and a run kept with --keep leaves its spec, every rank's state and its verdict in the directory
(the lazy-init case of docs/findings.md section 1 on 2 gloo ranks, which completes on gloo)."""

from __future__ import annotations

import json

import pytest
import torch

from auditor.errors import InputError
from auditor.repro import lazy_init
from auditor.repro.launch import check_machine, launch
from auditor.repro.plan import Spec


def test_nccl_needs_a_gpu_per_rank_and_gloo_runs_anywhere():
    check_machine(Spec("lazy-init", nproc=2, backend="gloo"))  # no exception: the CPU variant
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(InputError) as exc:
        check_machine(Spec("lazy-init", nproc=gpus + 1, backend="nccl"))
    assert exc.value.subject == ("--nproc" if gpus else "--backend nccl")


@pytest.mark.heavy  # torchrun and 2 gloo ranks: 35 s measured on a loaded 2-core machine
def test_a_kept_run_leaves_its_spec_states_and_verdict(tmp_path):
    spec = Spec("lazy-init", nproc=2, backend="gloo", timeout=60.0)
    outcome = launch(spec, lazy_init.plan(spec), keep=tmp_path)
    assert outcome.status == "completed" and outcome.exit_code == 0, outcome.line
    assert Spec.load(tmp_path / "spec.json") == spec
    assert json.loads((tmp_path / "verdict.json").read_text()) == json.loads(json.dumps(outcome.to_json()))
    states = [json.loads((tmp_path / f"rank-{r}.state.json").read_text()) for r in range(2)]
    assert [s["phase"] for s in states] == ["done", "done"]
