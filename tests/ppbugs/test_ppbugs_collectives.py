"""PP-BugBench deepspeed-4726: one broadcast whose members pass different dtypes, recorded on gloo.

The case's driver (benchmarks/ppbugs/cases/deepspeed-4726/driver.py) issues DeepSpeed 0.12.3's
`PipelineEngine._aggregate_total_loss` order: the last stage broadcasts fp16 losses to the pipe
group, the other stage receives them into float32. The run completes (the losses arrive as
garbage); the report must say the broadcast's members disagree in dtype, naming both lines. The
fixed side (deepspeed 0.16.0's `.float()`) must be clean. About 15 s a side on 2 cores.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from tests.ppbugs.test_ppbugs_corpus import free_port
from tests.ppbugs.test_ppbugs_diffusion_pipe import p2paudit

pytestmark = pytest.mark.heavy

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "benchmarks" / "ppbugs" / "cases" / "deepspeed-4726"
SIDES = {s["name"]: s for s in tomllib.loads((CASE / "case.toml").read_text(encoding="utf-8"))["side"]}


def report(side_name: str, tmp: Path) -> tuple[int, dict]:
    side = SIDES[side_name]
    command = [str(free_port()) if arg == "{port}" else arg for arg in side["command"]]
    p2paudit("record", "--out", str(tmp / "trace"), "--hang-after", "10", "--", *command, cwd=CASE, timeout=120)
    inventory = tmp / "sites.json"
    assert p2paudit("sites", str(CASE), "--format", "json", "-o", str(inventory)).returncode == 0
    out = tmp / "report.json"
    done = p2paudit("report", "--scan", str(inventory), "--trace", str(tmp / "trace"), "--transport",
                    side["transport"], "--format", "json", "-o", str(out))
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return done.returncode, json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.heavy
def test_buggy_broadcast_members_disagree_in_dtype(tmp_path):
    rc, doc = report("buggy", tmp_path)
    assert rc == 1
    mismatch = next(f for f in doc["findings"] if f["kind"] == "p2p-mismatch")
    assert mismatch["severity"] == "error"
    pair = mismatch["detail"]["pairs"][0]
    members = sorted((m["rank"], m["api"], m["dtype"], m["bytes"], m["site"]) for m in (pair["send"], pair["recv"]))
    assert members == [(0, "broadcast", "float32", 8, "driver.py:35"), (1, "broadcast", "float16", 4, "driver.py:32")]
    assert pair["what"] == "size and dtype" and pair["collective"] == "broadcast"
    assert "broadcast" in mismatch["message"] and "driver.py:32" in mismatch["message"]


def test_fixed_broadcast_is_clean(tmp_path):
    rc, doc = report("fixed", tmp_path)
    assert rc == 0, [f["message"] for f in doc["findings"] if f["severity"] == "error"]
    assert doc["run"]["waitfor"]["mismatched_pairs"] == []
