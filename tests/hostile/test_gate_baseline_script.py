"""A gate baseline scanned from another launch script is bad input (h-explore: `gate --config
qwen3_moe.sh --baseline glm.json` passed, judging qwen3_moe against GLM's sites and inheriting
GLM's torch). The shipped baseline is ci/baseline/glm5_1_lora_pp4.megatron-core-0.17.0.json."""

from __future__ import annotations

import shutil
from pathlib import Path

from auditor.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "ci" / "baseline" / "glm5_1_lora_pp4.megatron-core-0.17.0.json"


def test_a_baseline_of_another_script_is_refused_before_the_scan(capsys):
    status = cli_main(["gate", "--config", str(ROOT / "examples" / "glm5_1_lora_pp2.sh"),
                       "--baseline", str(BASELINE), "--target", "megatron-core==0.19.2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and "was scanned from glm5_1_lora_pp4.sh, not glm5_1_lora_pp2.sh" in err[0]


def test_the_same_script_elsewhere_is_its_own_baseline(tmp_path, capsys):
    """A CI checkout puts the script at another path: the file name is what is compared."""
    copy = tmp_path / "glm5_1_lora_pp4.sh"
    shutil.copy(ROOT / "examples" / "glm5_1_lora_pp4.sh", copy)
    status = cli_main(["gate", "--config", str(copy), "--baseline", str(BASELINE),
                       "--target", "megatron-core==0.17.0"])
    assert status in (0, 1), capsys.readouterr().err
