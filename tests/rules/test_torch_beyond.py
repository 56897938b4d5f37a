"""A torch newer than every release rules/torch.toml judges (`[framework] releases`) is not
covered by the open-ended ranges (`versions = ">=2.11"`) written before it existed: its settings
are unknown, and the scan says so, never CLEAN (found by running `scan --torch 9.9.9` on the
shipped GLM-5.1 example, which read CLEAN)."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.cli import main as cli_main
from auditor.rulebook import files

ROOT = Path(__file__).resolve().parents[2]
NEWEST = max(files.load("torch").section("framework")["releases"],
             key=lambda v: tuple(int(p) for p in v.split(".")))


def test_a_newer_torch_admits_only_what_holds_for_any_release():
    ranged = [e for e in files.load("torch").data["rule"] if e.get("versions")]
    assert ranged, "rules/torch.toml selects rules by release"
    newest, beyond = files.load("torch", NEWEST), files.load("torch", "9.9.9")
    assert any(e.get("versions") for e in newest.table("rule"))
    assert all(not e.get("versions") or e.get("unknown") for e in beyond.table("rule"))
    # a local build tag or a pre-release of a covered release is that release
    assert files.load("torch", f"{NEWEST}+cu128").table("rule") == newest.table("rule")


@pytest.mark.parametrize("torch,release", [("9.9.9", "9.9.9"), ("3.0.0a0+git1234", "3.0.0")])
def test_a_scan_on_a_newer_torch_is_inconclusive(torch, release, capsys):
    status = cli_main(["scan", "--config", str(ROOT / "examples/glm5_1_lora_pp4.sh"), "--torch", torch])
    out = capsys.readouterr().out
    assert status == 1
    assert "INCONCLUSIVE" in out and f"torch {release} is outside" in " ".join(out.split())
