"""The wheel, as a user installs it: built from this checkout, installed into a fresh virtual
environment (reusing this interpreter's packages, torch among them), then the README's first
command run from it, far from the checkout so nothing is imported from here."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
                    "-q", "-w", str(out), str(ROOT)], check=True, capture_output=True, text=True)
    (built,) = out.glob("p2paudit-*.whl")
    return built


def test_wheel_carries_rules_templates_and_the_autostart_pth(wheel):
    from auditor.rulebook import rules_dir
    assert rules_dir() == ROOT / "rules"  # in a checkout, the rules beside the package
    names = set(zipfile.ZipFile(wheel).namelist())
    rules = {p.name for p in (ROOT / "rules").glob("*.toml")}
    assert rules and {f"auditor/rules/{r}" for r in rules} <= names
    templates = {p.name for p in (ROOT / "auditor" / "report" / "templates").iterdir()}
    assert {f"auditor/report/templates/{t}" for t in templates} <= names
    assert "p2paudit-autostart.pth" in names
    assert "auditor/dynamic/bootstrap/sitecustomize.py" in names


@pytest.mark.wheels
def test_readme_first_command_runs_from_the_installed_wheel(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(venv)], check=True)
    python = venv / "bin" / "python"
    # pip comes from the reused site-packages; it installs into the venv it runs in.
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--disable-pip-version-check", str(wheel)], check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "P2PAUDIT_TRACE")}
    where = subprocess.run(
        [str(python), "-c", "import auditor, auditor.rulebook as r; print(auditor.__file__); "
                            "print(r.rules_dir())"],
        cwd=tmp_path, env=env, check=True, capture_output=True, text=True).stdout.split()
    site = str(venv / "lib")
    assert where[0].startswith(site) and where[1].startswith(site)  # the wheel's, not the checkout's
    assert (Path(where[1]) / "torch.toml").is_file()
    scan = subprocess.run(
        [str(venv / "bin" / "p2paudit"), "scan", "--config",
         str(ROOT / "examples" / "glm5_1_lora_pp4.sh"), "--torch", "2.10.0"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert scan.returncode == 1, scan.stderr[-2000:]
    head = next(line for line in scan.stdout.splitlines() if line.startswith("FINDINGS: "))
    assert head.startswith("FINDINGS: TORCH_DISTRIBUTED_DEBUG=DETAIL on torch 2.10.0 makes")
    assert "unbatched-contradiction (10 site(s)" in scan.stdout  # under its cause
