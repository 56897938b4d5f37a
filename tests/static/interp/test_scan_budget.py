"""Scanning torch itself from one of its pipeline schedules, with the interpreter's node budget
lowered below what that program needs: the scan ends (no RecursionError), names every cut in
`analysis`, and reports no site unreachable: what was not analysed is unknown. With the real
budgets the same scan needs no cut (torch's recursive config walk, install_config_module, is
widened, not cut: tests/titan/test_recursion_budget.py)."""

from __future__ import annotations

import pytest
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def scan_torch(tmp_path: Path, max_nodes: int | None) -> dict:
    out = tmp_path / "scan.json"
    lowered = f"import auditor.static.interp.calls as c; c.MAX_NODES = {max_nodes}; " if max_nodes else ""
    proc = subprocess.run(
        [sys.executable, "-c", f"{lowered}from auditor.cli import main; raise SystemExit(main())", "scan",
         "--config", str(ROOT / "examples" / "megatron_lm_gpt_pp2.sh"),
         "--target", "torch", "--entry", "torch.distributed.pipelining.schedules:Schedule1F1B.step",
         "--format", "json", "-o", str(out)],
        capture_output=True, text=True, timeout=900, cwd=ROOT, env=dict(os.environ))
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr[-2000:]
    return json.loads(out.read_text())


@pytest.mark.heavy
def test_with_the_real_budgets_scanning_torch_needs_no_cut(tmp_path):
    assert scan_torch(tmp_path, None)["analysis"]["budget_cuts"] == []


def test_scanning_torch_reports_the_budget_cuts_and_rules_nothing_out(tmp_path):
    doc = scan_torch(tmp_path, 300)
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
