"""The same scan gives the same document in every run: the interpreter's calling contexts do not
depend on the order a set iterates in, which changes with PYTHONHASHSEED (names) and with
addresses (objects, closures). DeepSpeed's pipeline scan was the one that moved: 680 to 784
function contexts between seeds before its walks took values in one order (`values.ordered`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "deepspeed_pipe_pp2.sh"


def scan_in_fresh_process(seed: str, out: Path) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(SCRIPT),
                    "--target", "deepspeed==0.16.0", "--torch", "2.13.0", "--jobs", "1",
                    "--format", "json", "-o", str(out)], env=env, capture_output=True)
    assert done.returncode in (0, 1), done.stderr  # 1: the scan has findings
    doc = json.loads(out.read_text())
    doc["analysis"].pop("seconds")
    return doc


def test_a_scan_is_the_same_under_other_hash_seeds(release, tmp_path):
    release("deepspeed==0.16.0")  # fetched once, before the timed runs
    docs = [scan_in_fresh_process(seed, tmp_path / f"scan-{seed}.json") for seed in ("1", "2")]
    assert docs[0]["analysis"]["functions_interpreted"] == docs[1]["analysis"]["functions_interpreted"]
    assert docs[0]["sites"] == docs[1]["sites"]
