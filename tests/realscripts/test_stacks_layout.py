"""Issue 22 item 9: Megatron-LM's `--pipeline-model-parallel-layout` implies virtual stages.

megatron-core 0.17.0 megatron/training/arguments.py:776-784 (validate_args): `num_stages =
PipelineParallelLayerLayout.get_num_stages_from_str(layout)`, `virtual_pipeline_model_parallel_size
= num_stages // pipeline_model_parallel_size`, None when that is 1. A virtual pipeline keeps
overlap_p2p_comm (on by default) and so `batch_p2p_comm = not overlap_p2p_comm` is False: the
layout decides batching. The layouts below are written the way NVIDIA/Megatron-LM's DeepSeek-V3
recipes spell them (megatron/core/transformer/pipeline_parallel_layer_layout.py docstring at
core_v0.17.0, commit 9539a12e1b04: "Ettt|(tt|)*29,m|L").
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from auditor import sources
from auditor.config.derive import derive
from auditor.config.expr import compile_expr, evaluate
from auditor.config.launch import parse_launch

BASE = ("export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 16 --hidden-size 1024 "
        "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
        "--micro-batch-size 1 --bf16 --lr 1e-4 --train-iters 10 --pipeline-model-parallel-size 4 ")

LAYOUTS = ["Et*2|(t*2|)*6,t*2L", "Ettt|(tt|)*29,m|L", "Et*4|t*4|t*4|t*4L", "(t|)*3,tL", "Et*12|t*12,m|L",
           "Et(tt|tt|tt)*2,tL", "|Et*3|(|tt)*2,L"]


def _derive(layout: str):
    text = BASE + f"--pipeline-model-parallel-layout '{layout}'\n"
    return derive(parse_launch(text, "run.sh"), {"megatron-core": "0.17.0"}, torch_version="2.11.0")


def test_eight_stages_over_pp4_is_two_virtual_stages_and_unbatched():
    config = _derive("Et*2|(t*2|)*6,t*2L")
    assert config.get("virtual_pipeline_model_parallel_size").value == 2
    assert config.get("overlap_p2p_comm").value is True
    assert config.get("batch_p2p_comm").value is False


def test_four_stages_over_pp4_is_no_virtual_pipeline_and_batched():
    config = _derive("Et*4|t*4|t*4|t*4L")
    assert config.get("virtual_pipeline_model_parallel_size").value is None
    assert config.get("batch_p2p_comm").value is True


@pytest.mark.heavy
@pytest.mark.wheels
def test_stage_count_is_megatron_cores_own():
    """The rules' count against PipelineParallelLayerLayout.get_num_stages_from_str itself."""
    root = sources.resolve("megatron-core==0.17.0").root
    oracle = textwrap.dedent("""
        import json, sys
        from megatron.core.transformer.pipeline_parallel_layer_layout import PipelineParallelLayerLayout as P
        print(json.dumps([P.get_num_stages_from_str(s) for s in json.loads(sys.argv[1])]))
    """)
    import json
    proc = subprocess.run([sys.executable, "-c", oracle, json.dumps(LAYOUTS)], capture_output=True,
                          text=True, check=True, timeout=300, env={"PYTHONPATH": str(root), "PATH": ""})
    real = json.loads(proc.stdout)
    ours = [evaluate(compile_expr("layout_stages(x)"), lambda n, s=s: s, lambda n: None) for s in LAYOUTS]
    assert ours == real


def test_stages_not_a_multiple_of_pp_stop_the_run():
    config = _derive("Et*4|t*4|t*4|t*2|t*2L")  # 5 stages over PP 4: validate_args asserts
    assert any(f.detail.get("rule") == "mlm.layout-stages-divisible" and "5 stages" in f.message
               for f in config.findings)
