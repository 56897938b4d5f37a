"""An unknown word among the launcher's own options (`srun ${SRUN_ARGS} ...`, `torchrun
"${DISTRIBUTED_ARGS[@]}" ...` built in a branch) may carry any option: srun's `--export=...`
(the environment the run gets) and the sizes, except those written after it (the last wins).

Written after NVIDIA-NeMo/Megatron-Bridge examples/megatron_mimo/qwen35_vl/slurm_sft.sh (commit
067f987df0, `srun_base` with `--export=ALL`, lines 247-257) and NVIDIA/Megatron-LM
examples/gpt3/train_gpt3_175b_distributed.sh (commit 9539a12e1b04, DISTRIBUTED_ARGS as an array).
Such a word may stand before options that take a value (`mpirun ${MPI_ARGS:-} -np 8 python ...`,
the forms of review r36-falseclean 5) or a module option (NVIDIA/Megatron-LM 9539a12e1b
examples/inference/llama_mistral/run_static_inference_llama4_scout.sh: `torchrun $DISTRIBUTED_ARGS
-m examples.inference.gpt.gpt_static_inference`): still the launcher's, not its program.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor import cli
from auditor.config.launch import parse_launch

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


@pytest.mark.parametrize("command", [
    "mpirun ${MPI_ARGS:-} -np 8 python pretrain_gpt.py",
    "deepspeed ${DS_ARGS:-} --num_gpus 8 pretrain_gpt.py",
    "torchrun ${DIST:-} --nproc_per_node 8 pretrain_gpt.py",
    "torchrun $DIST --nproc_per_node $NPROC pretrain_gpt.py",
    "torchrun $DISTRIBUTED_ARGS -m pretrain_gpt",
])
def test_an_unknown_word_before_options_with_values_is_the_launchers(command):
    """The word is one of the launcher's options, and the script the one after them (before
    this, the script was taken to be the unknown word: INCONCLUSIVE on a path not known)."""
    config = parse_launch(HEAD + command + TRAIN.removeprefix("pretrain_gpt.py"), "train.sh")
    assert config.script == command.split()[-1] and config.options_opened is not None
