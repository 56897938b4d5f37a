"""An unknown word among the launcher's own options (`srun ${SRUN_ARGS} ...`, `torchrun
"${DISTRIBUTED_ARGS[@]}" ...` built in a branch) may carry any option: srun's `--export=...`
(the environment the run gets) and the sizes, except those written after it (the last wins).

Written after NVIDIA-NeMo/Megatron-Bridge examples/megatron_mimo/qwen35_vl/slurm_sft.sh (commit
067f987df0, `srun_base` with `--export=ALL`, lines 247-257) and NVIDIA/Megatron-LM
examples/gpt3/train_gpt3_175b_distributed.sh (commit 9539a12e1b04, DISTRIBUTED_ARGS as an array).
"""

from __future__ import annotations

import json
from pathlib import Path

from auditor import cli

TRAIN = """pretrain_gpt.py --num-layers 24 --hidden-size 2048 \\
    --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \\
    --micro-batch-size 1 --global-batch-size 16 --train-iters 10 \\
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2
"""
HEAD = "#!/bin/bash\n# megatron-core==0.17.0\n# torch==2.10.0\n"
SRUN = HEAD + "SRUN_ARGS=$(cat srun_args.txt)\nsrun ${SRUN_ARGS} --nodes=2 python " + TRAIN
BRANCH = HEAD + """NUM_NODES=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | wc -l)
DISTRIBUTED_ARGS=(--nproc_per_node 8)
if [ "$NUM_NODES" -gt 1 ]; then
    DISTRIBUTED_ARGS+=(--nnodes "$NUM_NODES" --node_rank "$SLURM_NODEID")
fi
torchrun "${DISTRIBUTED_ARGS[@]}" """ + TRAIN


def _scan(capsys, tmp_path: Path, text: str) -> tuple[int, dict]:
    script = tmp_path / "train.sh"
    script.write_text(text, encoding="utf-8")
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_an_unknown_srun_option_word_may_export_the_debug_level(capsys, tmp_path):
    code, doc = _scan(capsys, tmp_path, SRUN)
    assert doc["verdict"]["status"] != "clean" and code != 0
    assert "--set env.TORCH_DISTRIBUTED_DEBUG=VALUE" in json.dumps(doc["verdict"]["undecided"])


def test_sizes_not_written_after_the_unknown_word_are_unknown(capsys, tmp_path):
    _, doc = _scan(capsys, tmp_path, SRUN)
    assert doc["launch"]["world_size"] is None
    assert "--nodes=2" in doc["launch"]["world_source"] or "--nodes 2" in doc["launch"]["world_source"]


def test_an_unknown_rest_of_torchruns_options_leaves_the_node_count_unknown(capsys, tmp_path):
    _, doc = _scan(capsys, tmp_path, BRANCH)
    assert doc["verdict"]["status"] == "inconclusive" or "DOES NOT START" not in doc["verdict"]["headline"]
    assert doc["launch"]["world_size"] is None
