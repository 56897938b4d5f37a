"""Issue 22 item 12 / issue 28 item 8: `--set` and `--matrix` with a key nothing reads are bad
input (exit 2) naming the closest known key; `--matrix pipline_model_parallel_size=1,2,4`
printed three identical columns as if each value had been applied.

The script is the shipped examples/glm5_1_lora_pp4.sh (the ms-swift #9451 run, written after
modelscope/ms-swift examples/megatron/lora/*.sh: `megatron sft ... --pipeline_model_parallel_size`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "examples" / "glm5_1_lora_pp4.sh")


def scan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", SCRIPT, *args],
                          check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.heavy
@pytest.mark.parametrize(("args", "bad", "close"), [
    (["--matrix", "pipline_model_parallel_size=1,2,4"], "--matrix pipline_model_parallel_size",
     "pipeline_model_parallel_size"),
    (["--set", "overlap_p2p_com=true"], "--set overlap_p2p_com", "overlap_p2p_comm"),
    (["--set", "virtual-pipeline-model-parallel-sise=2"],
     "--set virtual_pipeline_model_parallel_sise", "virtual_pipeline_model_parallel_size"),
])
def test_a_misspelt_key_is_bad_input_with_the_closest_key(args, bad, close):
    proc = scan(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and bad in lines[0] and f"did you mean {close}?" in lines[0]


@pytest.mark.heavy
def test_known_keys_still_apply():
    """Rule keys, a key of the matrix spelt with dashes, and a config attribute only a guard on
    the P2P path tests (mtp_standalone is also a rule key; variable_seq_lengths a guard's)."""
    proc = scan("--matrix", "pipeline-model-parallel-size=1,2")
    assert proc.returncode in (0, 1), proc.stderr
    assert "data_parallel_size" in proc.stdout  # the columns differ
    proc = scan("--set", "variable_seq_lengths=false", "--set", "hidden_size=4096", "--torch", "2.11.0")
    assert proc.returncode in (0, 1), proc.stderr
