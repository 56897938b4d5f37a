"""A release rules/ verify that the package index lacks is undecided, not bad input (issue 22
items 2, 10).

The script reproduces alibaba/ROLL@8eb27cc2dc34c4d1310b169d9b86d339004d811a
examples/qwen2.5-7B-sft_megatron/run_sft_pipeline.sh (`set +x`, `CONFIG_PATH=$(basename
$(dirname $0))`, `python examples/start_sft_pipeline.py --config_path $CONFIG_PATH --config_name
sft_config`), copied away from its checkout with its config directory: no mcore_adapter/ beside
it, and rules/roll.toml verifies mcore-adapter 0.10.0.dev0, which only ROLL's tree carries (PyPI
has an empty 0.0.1). The decided step is the tree the run imports, given by --target.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from auditor.scan import _given_releases, release_choice
from tests.realscripts.test_roll import SFT, roll_tree

ROOT = Path(__file__).resolve().parents[2]


def _copied_away(tmp_path: Path) -> Path:
    """The example directory alone, as a user copies it out of the checkout."""
    checkout = roll_tree(tmp_path / "ROLL", "qwen2.5-7B-sft_megatron", SFT, "sft_config", kind="sft")
    away = tmp_path / "x" / "qwen2.5-7B-sft_megatron"
    away.mkdir(parents=True)
    for f in checkout.parent.iterdir():
        (away / f.name).write_text(f.read_text())
    return away / checkout.name


def _scan(script: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script), *extra],
                          cwd=script.parent.parent, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "HOME": str(Path.home())})


def test_unindexed_release_without_its_tree_is_inconclusive(tmp_path: Path) -> None:
    """mcore-adapter==0.10.0.dev0 is the release the plan picks; the index lacks it."""
    scan = _scan(_copied_away(tmp_path))
    out = " ".join((scan.stdout + scan.stderr).split())
    assert scan.returncode == 1, out
    assert "INCONCLUSIVE" in out and "mcore-adapter==0.10.0.dev0" in out
    assert "decide it with --target PATH/mcore_adapter" in out


def test_a_given_tree_is_read_not_fetched(tmp_path: Path) -> None:
    """`--target ROLL/mcore_adapter`: the tree gives the release, its requirements read from it."""
    script = _copied_away(tmp_path)
    given = _given_releases([str(tmp_path / "ROLL" / "mcore_adapter")])
    _, choice = release_choice(str(script), given=given)
    assert choice is not None
    assert choice.source_dirs["mcore-adapter"] == str(tmp_path / "ROLL" / "mcore_adapter")
    assert all(c["mcore-adapter"] == "0.10.0.dev0" for c in choice.combinations)


def test_a_stated_release_the_index_lacks_is_still_bad_input(tmp_path: Path) -> None:
    """A script's own `# mcore-adapter==0.10.0.dev0` names a release that does not exist there."""
    script = _copied_away(tmp_path)
    script.write_text(script.read_text().replace("set +x\n", "set +x\n# mcore-adapter==0.10.0.dev0\n"))
    scan = _scan(script)
    assert scan.returncode == 2 and "no such release" in scan.stderr
