"""An inference entry whose pipeline size its library code sets (unknown to the scan) is judged at
each case value; where every case that starts is NOT A PIPELINE RUN, so is the run, said with the
cases (analysis/settingcases.py `settled`, analysis/verdict.py).

Written after NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a
examples/models/falcon_h1/inference.sh (`python -m torch.distributed.run --nproc_per_node=1
scripts/inference/text_generation.py ... --tp 1 --pp 1`): text_generation.py:197-226 parses
its flags through `add_args(parser).parse_args()` and passes
`pp=args.pp` to load_bridge_model, whose _apply_provider_parallelism
(src/megatron/bridge/inference/text_generation.py:140-141) does `setattr(provider,
"pipeline_model_parallel_size", pp)`. The scan cannot read the size, judges PP 1, 2 and 4; on one
process only PP 1 starts, and there the inference's P2P cannot fire. Before, the run read CLEAN (a
generate script taken for a one-stage training run). On 2 processes PP 2 starts and its inference
sends between stages: not NOT A PIPELINE RUN (fail closed).
"""

from __future__ import annotations

import pytest

from auditor.analysis.schedule_reach import KIND
from tests.analysis.test_schedule_reach_stage_guard import _checkout, _scan

SERVE_PY = """import argparse

from megatron.core.inference.wrapper import Wrapper
from helpers import load_model


def add_args(parser):
    parser.add_argument("--pp", type=int, default=1)
    return parser


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    args = add_args(parser).parse_args()
    model = load_model(pp=args.pp)
    Wrapper(None).run_one_forward_step({"tokens": model})


if __name__ == "__main__":
    main()
"""
HELPERS_PY = """def _apply(provider, *, pp):
    setattr(provider, "pipeline_model_parallel_size", pp)


def load_model(*, pp):
    provider = object()
    parallelism = dict(pp=pp)
    _apply(provider, **parallelism)
    return provider
"""
RUN_SH = """#!/bin/bash
# megatron-core==0.19.2 torch==2.11.0
python -m torch.distributed.run --nproc_per_node={n} examples/inference/serve.py --pp 1
"""


@pytest.mark.heavy
@pytest.mark.parametrize("n, one", [(1, True), (2, False)])
def test_every_starting_case_not_a_pipeline(capsys, monkeypatch, tmp_path, n, one):
    script = _checkout(tmp_path, "1")
    (script.parent / "serve.py").write_text(SERVE_PY, encoding="utf-8")
    (script.parent / "helpers.py").write_text(HELPERS_PY, encoding="utf-8")
    script.write_text(RUN_SH.format(n=n), encoding="utf-8")
    (tmp_path / "megatron/training/arguments.py").unlink()  # Megatron-Bridge's checkout has no megatron/training
    code, doc = _scan(capsys, monkeypatch, script)
    head = doc["verdict"]["headline"]
    cases = doc["config"].get("setting_basis") or {}
    assert cases.get("key") == "pipeline_model_parallel_size", head
    if one:
        assert code == 0 and doc["verdict"]["status"] == "not-pipeline", head
        assert "as --set gives it" in head and "Holds for any pipeline_model_parallel_size" in head, head
        assert "at 2, 4 the run does not start" in head, head
    else:
        assert doc["verdict"]["status"] != "not-pipeline", head
        assert not any(f["kind"] == KIND for f in doc["findings"]), head
