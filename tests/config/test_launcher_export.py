"""The environment a launcher's own options give the command it starts: srun's
`--export=[ALL,|NONE,]VAR=VAL[,VAR=VAL]` (or `--export VAR=VAL`, two words), mpirun's
`-x VAR=VAL` and sbatch's `--export` for its job file, read like an `export` in the script (issue 22 items 1/4/9: a PP 4 + DETAIL run on
torch 2.10 whose DETAIL is set only in srun's `--export` read CLEAN).

Slurm srun(1) --export (SchedMD/slurm doc/man/man1/srun.1, commit 3bf22c447a): "Exports all
SLURM* environment variables along with explicitly defined variables ... If ALL is specified,
then all user environment variables will be loaded and will take precedence over any explicitly
given environment variables"; NONE: only SLURM_* variables. Open MPI mpirun(1): "-x <env>
Export the specified environment variables to the remote nodes before executing the program".

The scripts are written after NVIDIA-NeMo/Megatron-Bridge examples/megatron_mimo/qwen35_vl/
slurm_sft.sh (commit 067f987df0, `srun --export=ALL ...` around the training command, lines
247-257) and NVIDIA/Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh (commit
9539a12e1b04, the pretrain_gpt.py flags).
"""

from __future__ import annotations

import json
from pathlib import Path

from auditor import cli

TRAIN = """pretrain_gpt.py --num-layers 24 --hidden-size 2048 \\
    --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \\
    --micro-batch-size 1 --global-batch-size 16 --train-iters 10 \\
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 4
"""
HEAD = "#!/bin/bash\n# megatron-core==0.17.0\n# torch==2.10.0\n"
SIZES = "--nodes=2 --ntasks-per-node=8"


def _scan(capsys, tmp_path: Path, text: str) -> dict:
    script = tmp_path / "train.sh"
    script.write_text(text, encoding="utf-8")
    cli.main(["scan", "--config", str(script), "--format", "json"])
    return json.loads(capsys.readouterr().out)


def _unbatched(doc: dict) -> bool:
    return any(c["kind"] == "batch-runs-unbatched" for c in doc["verdict"]["causes"])


def test_srun_export_all_with_detail_is_the_hang(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, HEAD + f"srun {SIZES} --export=ALL,TORCH_DISTRIBUTED_DEBUG=DETAIL python " + TRAIN)
    assert doc["verdict"]["status"] == "findings" and _unbatched(doc)


def test_srun_export_as_two_words_is_read(capsys, tmp_path):
    doc = _scan(capsys, tmp_path, HEAD + f"srun {SIZES} --export TORCH_DISTRIBUTED_DEBUG=DETAIL python " + TRAIN)
    assert doc["verdict"]["status"] == "findings" and _unbatched(doc)


def test_srun_export_in_front_of_torchrun_is_read(capsys, tmp_path):
    text = HEAD + ("srun --nodes=2 --export=ALL,NCCL_DEBUG=INFO,TORCH_DISTRIBUTED_DEBUG=DETAIL "
                   "torchrun --nproc-per-node 8 --nnodes 2 " + TRAIN)
    doc = _scan(capsys, tmp_path, text)
    assert doc["verdict"]["status"] == "findings" and _unbatched(doc)


def test_export_none_hides_the_callers_variables(capsys, tmp_path):
    text = HEAD + f"export TORCH_DISTRIBUTED_DEBUG=DETAIL\nsrun {SIZES} --export=NONE python " + TRAIN
    doc = _scan(capsys, tmp_path, text)
    assert not _unbatched(doc) and doc["verdict"]["status"] == "clean"


def test_a_list_without_all_passes_only_the_names_it_gives(capsys, tmp_path):
    dropped = HEAD + f"export TORCH_DISTRIBUTED_DEBUG=DETAIL\nsrun {SIZES} --export=NCCL_DEBUG=INFO python " + TRAIN
    assert not _unbatched(_scan(capsys, tmp_path, dropped))
    kept = HEAD + f"export TORCH_DISTRIBUTED_DEBUG=DETAIL\nsrun {SIZES} --export=TORCH_DISTRIBUTED_DEBUG python " + TRAIN
    assert _unbatched(_scan(capsys, tmp_path, kept))


def test_with_all_the_callers_own_value_wins(capsys, tmp_path):
    text = HEAD + f"export TORCH_DISTRIBUTED_DEBUG=OFF\nsrun {SIZES} --export=ALL,TORCH_DISTRIBUTED_DEBUG=DETAIL python " + TRAIN
    doc = _scan(capsys, tmp_path, text)
    assert not _unbatched(doc)


def test_an_unknown_value_makes_only_its_variable_unknown(capsys, tmp_path):
    text = HEAD + f"srun {SIZES} --export=ALL,TORCH_DISTRIBUTED_DEBUG=$LEVEL python " + TRAIN
    doc = _scan(capsys, tmp_path, text)
    assert doc["verdict"]["status"] == "inconclusive"
    assert "--set env.TORCH_DISTRIBUTED_DEBUG=VALUE" in json.dumps(doc["verdict"]["undecided"])
    assert doc["launch"]["world_size"] == 16


def test_an_unknown_part_may_name_any_variable(capsys, tmp_path):
    text = HEAD + f"srun {SIZES} --export=ALL,$EXTRA_ENV python " + TRAIN
    doc = _scan(capsys, tmp_path, text)
    assert doc["verdict"]["status"] != "clean"
    assert "--set env.TORCH_DISTRIBUTED_DEBUG=VALUE" in json.dumps(doc["verdict"]["undecided"])


def test_mpirun_x_sets_the_variable(capsys, tmp_path):
    text = HEAD + "mpirun -np 16 -x TORCH_DISTRIBUTED_DEBUG=DETAIL -x PATH python " + TRAIN
    doc = _scan(capsys, tmp_path, text)
    assert doc["verdict"]["status"] == "findings" and _unbatched(doc)


def test_an_unknown_srun_word_is_named_as_sruns_option(capsys, tmp_path):
    text = HEAD + "SRUN_ARGS=$(cat srun_args.txt)\nsrun ${SRUN_ARGS} --nodes=2 python " + TRAIN
    doc = _scan(capsys, tmp_path, text)
    said = [c for c in doc["findings"] if c["kind"] == "launch.unresolved-args"]
    assert said and "srun's options" in said[0]["message"] and "torchrun" not in said[0]["message"]


def _job(tmp_path: Path, submit: str) -> str:
    """A submitter and its job file (sbatch(1) --export: the same grammar as srun's)."""
    job = tmp_path / "job.sh"
    job.write_text(HEAD + f"#SBATCH {SIZES}\nsrun python " + TRAIN, encoding="utf-8")
    return HEAD + submit.replace("job.sh", str(job))


def test_sbatch_export_sets_the_jobs_variable(capsys, tmp_path):
    text = _job(tmp_path, "sbatch --export=ALL,TORCH_DISTRIBUTED_DEBUG=DETAIL job.sh\n")
    assert _unbatched(_scan(capsys, tmp_path, text))


def test_sbatch_export_none_hides_the_submitters_exports(capsys, tmp_path):
    text = _job(tmp_path, "export TORCH_DISTRIBUTED_DEBUG=DETAIL\nsbatch --export=NONE job.sh\n")
    assert not _unbatched(_scan(capsys, tmp_path, text))
    text = _job(tmp_path, "export TORCH_DISTRIBUTED_DEBUG=DETAIL\nsbatch job.sh\n")
    assert _unbatched(_scan(capsys, tmp_path, text))


def test_what_the_option_keeps_from_the_program_is_said(capsys, tmp_path):
    text = HEAD + f"export TORCH_DISTRIBUTED_DEBUG=DETAIL\nsrun {SIZES} --export=NONE python " + TRAIN
    notes = [f["message"] for f in _scan(capsys, tmp_path, text)["findings"] if f["kind"] == "launch.export-option"]
    assert notes and "TORCH_DISTRIBUTED_DEBUG does not reach" in notes[0]
    text = HEAD + f"export TORCH_DISTRIBUTED_DEBUG=OFF\nsrun {SIZES} --export=ALL,TORCH_DISTRIBUTED_DEBUG=DETAIL python " + TRAIN
    notes = [f["message"] for f in _scan(capsys, tmp_path, text)["findings"] if f["kind"] == "launch.export-option"]
    assert notes and "caller's own value wins" in notes[0]


def test_the_fix_removes_the_variable_from_the_option_list(capsys, tmp_path):
    script = tmp_path / "train.sh"
    script.write_text(HEAD + f"srun {SIZES} --export=ALL,TORCH_DISTRIBUTED_DEBUG=DETAIL,NCCL_DEBUG=INFO python "
                      + TRAIN, encoding="utf-8")
    code = cli.main(["fix", "--config", str(script), "--no-simulate", "--format", "diff"])
    out = capsys.readouterr().out
    assert code == 0 and "+srun --nodes=2 --ntasks-per-node=8 --export=ALL,NCCL_DEBUG=INFO python" in out
    assert "DETAIL" in script.read_text(encoding="utf-8")  # the input is never written over


def test_sbatch_export_none_reaches_the_jobs_srun_steps(capsys, tmp_path):
    """sbatch --export=NONE sets SLURM_EXPORT_ENV=NONE in the job (slurm src/sbatch/opt.c
    arg_set_export), which srun reads as its --export: what the job file exports stays behind."""
    job = tmp_path / "job.sh"
    body = f"#SBATCH {SIZES}\nexport TORCH_DISTRIBUTED_DEBUG=DETAIL\n"
    job.write_text(HEAD + body + "srun python " + TRAIN, encoding="utf-8")
    assert not _unbatched(_scan(capsys, tmp_path, HEAD + f"sbatch --export=NONE {job}\n"))
    job.write_text(HEAD + body + "export SLURM_EXPORT_ENV=ALL\nsrun python " + TRAIN, encoding="utf-8")
    assert _unbatched(_scan(capsys, tmp_path, HEAD + f"sbatch --export=NONE {job}\n"))
