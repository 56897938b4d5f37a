"""Issue 22 item 11: an inference entry whose only P2P is megatron-core's pipelined inference is NOT
A PIPELINE RUN at a pipeline size of 1 (analysis/schedule_reach.py, rules/megatron-core.toml
[[stage_predicate]]).

Written after NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553
examples/inference/run_inference_server.sh:71-77 (`torchrun ... -m
examples.inference.launch_inference_server ... --pipeline-model-parallel-size 1`), whose walk meets
megatron/core/inference/communication_utils.py `send_to_next_pipeline_rank` /
`recv_from_prev_pipeline_rank_` (P2POp + batch_isend_irecv), called only from
megatron/core/inference/model_inference_wrappers/abstract_model_inference_wrapper.py:203-214 under
`if not is_pipeline_first_stage(self.pp_group):` / `if not is_pipeline_last_stage(self.pp_group):`,
inside `forward_pass_with_pipeline_parallel`, itself called (:247) only where `not
(is_pipeline_first_stage(...) and is_pipeline_last_stage(...))`. At PP 1 both predicates are True
on every rank, so these sites cannot fire; before, the walk kept the run and the analysis of the
training schedule it never runs read CLEAN. At PP 2, or under a guard the rules do not know, the
site keeps the run (fail closed).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from auditor import cli, rulebook
from auditor.analysis.schedule_reach import KIND

SERVER_SH = """#!/bin/bash
# megatron-core==0.19.2 torch==2.11.0
torchrun --nproc-per-node 2 -m examples.inference.serve --tensor-model-parallel-size 2 \\
    --pipeline-model-parallel-size {pp}
"""
SERVE_PY = """import os
import sys

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), os.path.pardir, os.path.pardir)))

from megatron.core.inference.wrapper import Wrapper
from megatron.training import initialize_megatron
from megatron.training.arguments import parse_and_validate_args


def main():
    parse_and_validate_args()
    initialize_megatron()
    Wrapper(None).run_one_forward_step({{"tokens": sys.argv}})


if __name__ == "__main__":
    main()
"""
# megatron/training/arguments.py: the parser the server's flags are read from (launch_inference_
# server.py:75 `parse_and_validate_args(extra_args_provider=add_serve_args, ...)`).
ARGUMENTS_PY = """import argparse


def parse_and_validate_args(extra_args_provider=None, args_defaults={}):
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    group = parser.add_argument_group(title='distributed')
    group.add_argument('--tensor-model-parallel-size', type=int, default=1)
    group.add_argument('--pipeline-model-parallel-size', type=int, default=1)
    return parser.parse_args()
"""
# megatron/core/parallel_state.py and megatron/core/inference/communication_utils.py as in
# megatron-core 0.13.0-0.19.2 (the predicates' bodies, the P2P of send/recv).
PARALLEL_STATE_PY = """_PP_GROUP = None
_VPP_SIZE = None


def get_pipeline_model_parallel_rank():
    return _PP_GROUP.rank()


def get_pipeline_model_parallel_world_size():
    return _PP_GROUP.size()


def get_virtual_pipeline_model_parallel_world_size():
    return _VPP_SIZE


def is_pipeline_first_stage(ignore_virtual=True, vp_stage=None):
    if not ignore_virtual and get_virtual_pipeline_model_parallel_world_size() is not None:
        if vp_stage != 0:
            return False
    return get_pipeline_model_parallel_rank() == 0


def is_pipeline_last_stage(ignore_virtual=True, vp_stage=None):
    if not ignore_virtual and get_virtual_pipeline_model_parallel_world_size() is not None:
        if vp_stage != (get_virtual_pipeline_model_parallel_world_size() - 1):
            return False
    return get_pipeline_model_parallel_rank() == (get_pipeline_model_parallel_world_size() - 1)
"""
COMM_PY = """import torch

from megatron.core import parallel_state


def is_pipeline_first_stage(pp_group):
    if pp_group is None:
        return parallel_state.is_pipeline_first_stage(ignore_virtual=True)
    else:
        return pp_group.rank() == 0


def is_pipeline_last_stage(pp_group):
    if pp_group is None:
        return parallel_state.is_pipeline_last_stage(ignore_virtual=True)
    else:
        return pp_group.rank() == pp_group.size() - 1


def recv_from_prev_pipeline_rank_(recv_buffer, pp_group):
    prev = torch.distributed.P2POp(torch.distributed.irecv, recv_buffer, 0, pp_group)
    for req in torch.distributed.batch_isend_irecv([prev]):
        req.wait()


def send_to_next_pipeline_rank(tensor, pp_group):
    nxt = torch.distributed.P2POp(torch.distributed.isend, tensor, 1, pp_group)
    for req in torch.distributed.batch_isend_irecv([nxt]):
        req.wait()
"""
# abstract_model_inference_wrapper.py:196-251; `{guard}` the test before the send, `{outer}` the
# one before the pipelined forward.
WRAPPER_PY = """import torch

from megatron.core import parallel_state
from megatron.core.inference.communication_utils import (
    is_pipeline_first_stage,
    is_pipeline_last_stage,
    recv_from_prev_pipeline_rank_,
    send_to_next_pipeline_rank,
)


class Wrapper:
    def __init__(self, pp_group):
        self.pp_group = pp_group

    def forward_pass_with_pipeline_parallel(self, inference_input):
        recv_buffer = None
        if not is_pipeline_first_stage(self.pp_group):
            recv_buffer = torch.empty(1)
            recv_from_prev_pipeline_rank_(recv_buffer, self.pp_group)
        output_tensor = torch.zeros(1)
        if {guard}:
            send_to_next_pipeline_rank(output_tensor, self.pp_group)
        return output_tensor

    def run_one_forward_step(self, inference_input):
        if {outer}:
            return self.forward_pass_with_pipeline_parallel(inference_input)
        {plain}return torch.zeros(1)
"""
STAGE_GUARD = "not is_pipeline_last_stage(self.pp_group)"
PP_MODEL = "not (is_pipeline_first_stage(self.pp_group) and is_pipeline_last_stage(self.pp_group))"


def _checkout(tmp_path: Path, pp: str, guard: str = STAGE_GUARD, plain: str = "") -> Path:
    outer = PP_MODEL if guard == STAGE_GUARD else guard
    files = {
        "examples/inference/serve.py": SERVE_PY.format(),
        "megatron/__init__.py": "",
        "megatron/core/__init__.py": "",
        "megatron/training/__init__.py": "def initialize_megatron():\n    return None\n",
        "megatron/training/arguments.py": ARGUMENTS_PY,
        "megatron/core/parallel_state.py": PARALLEL_STATE_PY,
        "megatron/core/inference/__init__.py": "",
        "megatron/core/inference/communication_utils.py": COMM_PY,
        "megatron/core/inference/wrapper.py": WRAPPER_PY.format(guard=guard, outer=outer, plain=plain),
        "examples/inference/run_server.sh": SERVER_SH.format(pp=pp),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path / "examples/inference/run_server.sh"


def _scan(capsys, monkeypatch, script: Path) -> tuple[int, dict]:
    monkeypatch.chdir(script.parents[2])  # run from the checkout's root, as run_inference_server.sh is
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_pipelined_inference_at_pp1_is_no_pipeline_run(capsys, monkeypatch, tmp_path):
    code, doc = _scan(capsys, monkeypatch, _checkout(tmp_path, "1"))
    head = doc["verdict"]["headline"]
    assert code == 0 and doc["verdict"]["status"] == "not-pipeline", head
    assert head.startswith("NOT A PIPELINE RUN: serve.py reaches no pipeline schedule"), head
    # said with why: the setting, the predicates and the rules that decide them
    assert "at pipeline_model_parallel_size=1, as the run sets it" in head, head
    assert "is_pipeline_first_stage" in head and "[[stage_predicate]]" in head, head
    assert any(f["kind"] == KIND for f in doc["findings"]), head


@pytest.mark.parametrize("pp, guard, plain", [
    ("2", STAGE_GUARD, ""),  # at PP 2 the inference sends to the next stage
    # a guard the rules do not know (on the send and the call to it) keeps its site, at PP 1 too
    ("1", "torch.distributed.get_rank() != 0", ""),
    # ignore_virtual=False with a virtual pipeline asks the virtual stage: the body is walked
    ("1", "not parallel_state.is_pipeline_last_stage(False)", ""),
    # P2P outside any stage test
    ("1", STAGE_GUARD, "send_to_next_pipeline_rank(torch.zeros(1), self.pp_group)\n        "),
])
def test_p2p_not_ruled_out_by_a_stage_predicate_keeps_the_run(capsys, monkeypatch, tmp_path, pp, guard, plain):
    _, doc = _scan(capsys, monkeypatch, _checkout(tmp_path, pp, guard, plain))
    head = doc["verdict"]["headline"]
    assert doc["verdict"]["status"] != "not-pipeline", head
    assert not any(f["kind"] == KIND for f in doc["findings"]), head


def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_stage_predicates_are_as_the_releases_define_them(release):
    """Each [[stage_predicate]] is defined in each release its `checked` names, with the argument
    it names at its position and default, and the same body in each (the body read for the
    rule: a changed one is read again before the range grows)."""
    for p in rulebook.load("megatron-core").data["stage_predicate"]:
        module, name = p["function"].rsplit(".", 1)
        bodies = set()
        for pin in p["checked"]:
            found = _functions(release(pin).root / (module.replace(".", "/") + ".py")).get(name)
            assert found is not None, f"{pin}: {p['function']}"
            if "param" in p:
                args = found.args
                assert args.args[p["position"]].arg == p["param"], pin
                default = args.defaults[p["position"] - (len(args.args) - len(args.defaults))]
                assert isinstance(default, ast.Constant) and default.value is p["default"], pin
            bodies.add(ast.dump(ast.Module([found], []), include_attributes=False))
        assert len(bodies) == 1, f"{p['function']} differs among {p['checked']}"
