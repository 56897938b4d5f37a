"""Issue 22 item 11: an entry that runs from a checkout of the framework (Megatron-LM's
examples/inference/launch_inference_server.py, NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
run by examples/inference/run_inference_server.sh:71 as `torchrun -m
examples.inference.launch_inference_server ... --pipeline-model-parallel-size 1`) imports the
checkout's megatron/ package. That package is the framework's code, walked as a source
(analysis/schedule_reach.py): its own plug-in loading (megatron/core/transformer/spec_utils.py:49
`__import__`) is not the script's, as a release's is not. Before, the checkout's megatron/ was
read as the script's own local modules: the closure was cut at 400 modules and the framework's
dynamic imports left every such entry undecided (CLEAN on the training schedule it never runs).

An inference that sends activations between pipeline stages (megatron/core/inference/
communication_utils.py:105-107 `P2POp(irecv, ...)`, `batch_isend_irecv`, called from
model_inference_wrappers/abstract_model_inference_wrapper.py:205/212 when PP > 1) issues P2P:
the walk reaching a P2P site is not "no pipeline at any pipeline size" (fail closed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.analysis.schedule_reach import KIND

SERVER_SH = """#!/bin/bash
# megatron-core==0.19.2 torch==2.11.0
torchrun --nproc-per-node 2 -m examples.inference.serve --tensor-model-parallel-size 2 \\
    --pipeline-model-parallel-size 1
"""
SERVE_PY = """import os
import sys

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), os.path.pardir, os.path.pardir)))

from megatron.inference.utils import serve


def main():
    serve(sys.argv)


if __name__ == "__main__":
    main()
"""
# megatron/inference/utils.py: no release ships it; it builds layers through the framework's
# plug-in loading and runs the model forward, sending to the next stage only where the
# pipeline has one (abstract_model_inference_wrapper.py:211-214).
UTILS_PY = """import torch
from megatron.core.spec_utils import import_module


def serve(argv):
    layer = import_module(argv[1])
    out = layer(torch.zeros(1))
    {send}return out
"""
SPEC_UTILS_PY = """def import_module(path):
    module_path, name = path.rsplit(".", 1)
    return getattr(__import__(module_path, globals(), locals(), [name]), name)
"""
COMM_PY = """import torch


def send_to_next_pipeline_rank(tensor, next_rank):
    op = torch.distributed.P2POp(torch.distributed.isend, tensor, next_rank)
    for req in torch.distributed.batch_isend_irecv([op]):
        req.wait()
"""


def _checkout(tmp_path: Path, send: str) -> Path:
    files = {
        "examples/inference/serve.py": SERVE_PY,
        "megatron/__init__.py": "",
        "megatron/inference/__init__.py": "",
        "megatron/inference/utils.py": UTILS_PY.format(send=send),
        "megatron/core/__init__.py": "",
        "megatron/core/spec_utils.py": SPEC_UTILS_PY,
        "megatron/core/communication_utils.py": COMM_PY,
        "examples/inference/run_server.sh": SERVER_SH,
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path / "examples/inference/run_server.sh"


@pytest.mark.parametrize("send, status", [
    ("", "not-pipeline"),
    ("from megatron.core.communication_utils import send_to_next_pipeline_rank\n"
     "    send_to_next_pipeline_rank(out, 1)\n    ", "kept"),
])
def test_an_entry_in_a_framework_checkout_is_walked_through_it(capsys, monkeypatch, tmp_path, send, status):
    monkeypatch.chdir(tmp_path)  # run from the checkout's root, as run_inference_server.sh is
    code = cli.main(["scan", "--config", str(_checkout(tmp_path, send)), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    head = doc["verdict"]["headline"]
    assert (doc["verdict"]["status"] == "not-pipeline") == (status == "not-pipeline"), head
    assert any(f["kind"] == KIND for f in doc["findings"]) == (status == "not-pipeline"), head
    if status == "not-pipeline":
        assert code == 0 and head.startswith("NOT A PIPELINE RUN: serve.py reaches no pipeline schedule"), head
