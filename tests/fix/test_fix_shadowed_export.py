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
    script = tmp_path / "run.sh"
    script.write_text(RUN)
    (tmp_path / "pretrain_gpt.py").write_text(TRAINER)
    inputs = ScanInputs(str(script), torch_version="2.10.0")
    doc = run_scan(inputs)
    pointer.point(doc, inputs)
    assert [f["kind"] for f in doc["findings"] if "fix_command" in f] == ["batch-runs-unbatched"]
    made = plan.make(inputs, simulate=False)
    (unbatched,) = [p for p in made.proposals
                    if made.doc["findings"][p.cause.index]["kind"] == "batch-runs-unbatched"]
    assert unbatched.verified and made.verified
    assert "TORCH_DISTRIBUTED_DEBUG" not in made.patched[str(script)]
