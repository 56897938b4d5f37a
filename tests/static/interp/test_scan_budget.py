"""Scanning torch itself from one of its pipeline schedules: a program larger than the
interpreter's budgets. The scan ends (no RecursionError), names every cut in `analysis`, and
reports no site unreachable: what was not analysed is unknown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_scanning_torch_reports_the_budget_cuts_and_rules_nothing_out(tmp_path):
    out = tmp_path / "scan.json"
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "scan", "--config", str(ROOT / "examples" / "megatron_lm_gpt_pp2.sh"),
         "--target", "torch", "--entry", "torch.distributed.pipelining.schedules:Schedule1F1B.step",
         "--format", "json", "-o", str(out)],
        capture_output=True, text=True, timeout=900, cwd=ROOT, env=dict(os.environ))
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    # Fail closed: what the budget cut off is undecided, so the scan is never clean.
    assert doc["verdict"]["status"] in ("inconclusive", "findings")
    assert any("budget" in u["what"] for u in doc["verdict"]["undecided"])
    analysis = doc["analysis"]
    assert analysis["budget_exhausted"] is True
    cuts = analysis["budget_cuts"]
    assert cuts and {c["budget"] for c in cuts} <= {"MAX_NODES", "MAX_DEPTH", "MAX_IMPORT_DEPTH", "PYTHON_DEPTH"}
    assert all(c["function"].startswith("torch.") and c["limit"] > 0 for c in cuts)
    assert doc["sites"] and all(s["reachable"] in ("yes", "unknown") for s in doc["sites"])
    unknown = [s for s in doc["sites"] if s["reachable"] == "unknown"]
    assert unknown and all("budget" in s["reason"] for s in unknown)
