"""`export NAME=a` and then `NAME=b cmd` in one script: the command sees b, and a once the
prefix goes, so `fix` removes both, and `scan` points to `fix` only because fix then makes the
patch (fix.plan.propose). Before, the export was no setting of the run's: fix removed the prefix
alone, its re-scan still read DETAIL from the export, and fix made no patch for the
`p2paudit fix` command scan had printed.

The trainer and its flags are NVIDIA/Megatron-LM core_v0.17.0 (9539a12e1b) examples/llama/
train_llama3_8b_h100_fp8.sh's, as tests/fix/test_pyenv_pointer.py writes them; the two settings
of TORCH_DISTRIBUTED_DEBUG are written for this test (review input Q5 of h43-simulate)."""

from __future__ import annotations

import pytest

from auditor.fix import plan, pointer
from auditor.scan import ScanInputs, run_scan

pytestmark = pytest.mark.usefixtures("real_sources")

RUN = """\
#!/bin/bash
# megatron-core==0.17.0
export TORCH_DISTRIBUTED_DEBUG=DETAIL
TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc_per_node 4 pretrain_gpt.py \\
    --pipeline-model-parallel-size 4 \\
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\
    --micro-batch-size 1 --global-batch-size 64 \\
    --bf16
"""
TRAINER = "import torch\nfrom megatron.training import pretrain\n"


def test_fix_removes_the_export_a_prefix_shadows_where_scan_points_to_it(tmp_path):
    doc, made, script = _made(tmp_path, RUN)
    assert [f["kind"] for f in doc["findings"] if "fix_command" in f] == ["batch-runs-unbatched"]
    (unbatched,) = [p for p in made.proposals
                    if made.doc["findings"][p.cause.index]["kind"] == "batch-runs-unbatched"]
    assert unbatched.verified and made.verified
    assert "TORCH_DISTRIBUTED_DEBUG" not in made.patched[script]


def test_scan_of_a_script_whose_command_is_in_the_job_it_submits_points_to_no_export(tmp_path):
    """`sbatch --export=NONE job.sh`, the command (and DETAIL) in job.sh (tests/config/
    test_launcher_export.py): an `export` before the command, or the edit of its setting, would
    go at a line of job.sh in run.sh, which has fewer lines. fix has no edit for either (they
    are the job's), so scan prints no pointer; before, the pointer crashed the scan
    (IndexError, h42-simulate; main printed a pointer to a fix that crashed)."""
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n# megatron-core==0.17.0\n# torch==2.10.0\n"
                   "#SBATCH --nodes=2 --ntasks-per-node=8\nexport TORCH_DISTRIBUTED_DEBUG=DETAIL\n"
                   "srun python pretrain_gpt.py --num-layers 24 --hidden-size 2048 "
                   "--num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
                   "--global-batch-size 16 --tensor-model-parallel-size 4 "
                   "--pipeline-model-parallel-size 4\n")
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\n# megatron-core==0.17.0\nsbatch --export=NONE {job}\n")
    inputs = ScanInputs(str(script), torch_version="2.10.0")
    doc = run_scan(inputs)
    pointer.point(doc, inputs)
    assert doc["verdict"]["status"] == "clean"
    assert not [f for f in doc["findings"] if "fix_command" in f]
    # with SLURM_EXPORT_ENV=ALL in the job, DETAIL reaches the run: the setting is job.sh's
    # line 5, which run.sh lacks, so fix has no edit and no pointer is printed (it crashed too)
    text = job.read_text()
    job.write_text(text.replace("srun", "export SLURM_EXPORT_ENV=ALL\nsrun"))
    doc = run_scan(inputs)
    pointer.point(doc, inputs)
    assert doc["verdict"]["status"] == "findings"
    assert not [f for f in doc["findings"] if "fix_command" in f]


def _made(tmp_path, run: str):
    script = tmp_path / "run.sh"
    script.write_text(run)
    (tmp_path / "pretrain_gpt.py").write_text(TRAINER)
    inputs = ScanInputs(str(script), torch_version="2.10.0")
    doc = run_scan(inputs)
    pointer.point(doc, inputs)
    return doc, plan.make(inputs, simulate=False), str(script)


def test_an_export_of_another_value_the_prefix_shadows_stays(tmp_path):
    """review r43-scan-shell item 2: `export TORCH_DISTRIBUTED_DEBUG=INFO`, then the DETAIL prefix
    on torchrun: only the prefix gives DETAIL; ac05e7a's patch deleted the INFO export too, which
    every other command of the script reads. The prefix alone goes, and that verifies."""
    doc, made, script = _made(tmp_path, RUN.replace("export TORCH_DISTRIBUTED_DEBUG=DETAIL",
                                                    "export TORCH_DISTRIBUTED_DEBUG=INFO"))
    assert made.verified
    patched = made.patched[script]
    assert "export TORCH_DISTRIBUTED_DEBUG=INFO\n" in patched and "DEBUG=DETAIL" not in patched


def test_a_plain_setting_of_the_value_the_prefix_repeats_goes_with_it(tmp_path):
    """review r43-scan-shell item 2 (its p6): a plain `TORCH_DISTRIBUTED_DEBUG=DETAIL`, then the
    DETAIL prefix: scan pointed to `p2paudit fix`, whose patch removed the prefix alone, left the
    unexported DETAIL setting (launch.not-exported, new), did not verify and wrote nothing. The
    setting of the same value goes with the prefix; pointer and fix agree."""
    doc, made, script = _made(tmp_path, RUN.replace("export TORCH_DISTRIBUTED_DEBUG=DETAIL",
                                                    "TORCH_DISTRIBUTED_DEBUG=DETAIL"))
    assert [f["kind"] for f in doc["findings"] if "fix_command" in f] == ["batch-runs-unbatched"]
    (unbatched,) = [p for p in made.proposals
                    if made.doc["findings"][p.cause.index]["kind"] == "batch-runs-unbatched"]
    assert unbatched.verified and made.verified
    assert "TORCH_DISTRIBUTED_DEBUG" not in made.patched[script]
