"""bash.absent: a sourced file is judged surely absent only at an absolute path inside the
checkout around the launch script (THUDM/slime@624b824a89
scripts/low_precision/run-qwen3-30b-a3b-fp8.sh:28 sources a path its checkout lacks)."""

from __future__ import annotations

from pathlib import Path

from auditor.bash.absent import checkout_root, surely_absent


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "scripts" / "models").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    (root / "scripts" / "models" / "m.sh").write_text("X=1\n")
    (root / "scripts" / "run.sh").write_text("source x\n")
    return root


def test_the_checkout_is_the_nearest_folder_with_a_marker(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    assert checkout_root(str(root / "scripts" / "run.sh")) == root.resolve()
    assert checkout_root(str(tmp_path / "loose.sh")) is None


def test_an_absolute_path_the_checkout_lacks_is_absent(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    script = str(root / "scripts" / "run.sh")
    assert surely_absent(f"{root}/scripts/scripts/models/m.sh", script) == Path("scripts/scripts/models/m.sh")


def test_present_relative_or_outside_is_never_judged(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    script = str(root / "scripts" / "run.sh")
    assert surely_absent(f"{root}/scripts/models/m.sh", script) is None  # present
    assert surely_absent("scripts/scripts/models/m.sh", script) is None  # relative: the audit's cwd
    assert surely_absent(str(tmp_path / "elsewhere" / "m.sh"), script) is None  # outside the checkout
