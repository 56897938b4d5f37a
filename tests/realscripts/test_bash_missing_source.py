"""`source` of a file that is surely absent, under `set -e`, stops the script there (issue 22 item 4).

The construct: THUDM/slime scripts/low_precision/run-qwen3-30b-a3b-fp8.sh (commit
624b824a898ab0ec1fcb4d373004c7f3852bf515) runs `set -ex` (:14), then
`SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"` (:27) and
`source "${SCRIPT_DIR}/../scripts/models/qwen3-30B-A3B.sh"` (:28): scripts/scripts/models/ is not
in the tree (its siblings source ../models/), bash's `source` fails with status 1 and `set -e`
ends the script before `ray job submit`. Without `set -e` bash goes on without the file.

Surely absent: the path fully known, absolute and built from the script's own location (never
relative to the launch directory or from `pwd`: see test_bash_audit_cwd), not there, and inside the checkout around the
script, the tree this audit reads; anything else (a home directory, /mnt, a link out of the tree,
no checkout) is unknown, as before. Each case is also run by bash itself: the reader stops the
script exactly where bash stops it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from auditor.config.launch import ScriptExits, read_launch

SCRIPT_DIR = 'SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"'
SLIME = f"""#!/bin/bash
set -ex
export PYTHONUNBUFFERED=1
{SCRIPT_DIR}
source "${{SCRIPT_DIR}}/../scripts/models/qwen3-30B-A3B.sh"
"""
TRAIN = """ray job submit --address="http://127.0.0.1:8265" \\
   -- python3 train.py \\
   --actor-num-nodes 2 \\
   --actor-num-gpus-per-node 8 \\
   ${MODEL_ARGS[@]} \\
   --tensor-model-parallel-size 1 \\
   --pipeline-model-parallel-size 4
"""

CASES = {  # name: (the script before its training command, stops; run from the checkout's root)
    "slime-fp8": (SLIME, True),
    "the-right-path": (SLIME.replace("../scripts/models", "../models"), False),
    "no-set-e": (SLIME.replace("set -ex\n", ""), False),
    "set-plus-e-before": (SLIME.replace("export", "set +e\nexport"), False),
    "or-true": (SLIME.replace('qwen3-30B-A3B.sh"', 'qwen3-30B-A3B.sh" || true'), False),
    "dot": (SLIME.replace("source ", ". "), True),
    "relative-to-the-launch-directory": ("#!/bin/bash\nset -e\nsource scripts/env/missing.sh\n", None),
    "in-an-undecided-branch": ("#!/bin/bash\nset -e\nif [ -n \"$1\" ]; then source scripts/missing.sh; fi\n", False),
    "no-slash-searches-path": ("#!/bin/bash\nset -e\nsource p2paudit-missing-env.sh\n", None),
    "outside-the-checkout": ("#!/bin/bash\nset -e\nsource /p2paudit-missing-dir/env.sh\n", None),
    "an-unknown-part": ("#!/bin/bash\nset -e\nsource \"${MODEL_DIR}/env.sh\"\n", None),
}


def _checkout(root: Path, before: str) -> Path:
    """root/pyproject.toml, root/scripts/models/qwen3-30B-A3B.sh and the launch script in
    root/scripts/low_precision/."""
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'slime'\n", encoding="utf-8")
    (root / "scripts" / "models").mkdir(parents=True)
    (root / "scripts" / "models" / "qwen3-30B-A3B.sh").write_text(
        "MODEL_ARGS=(\n   --num-layers 48\n   --hidden-size 2048\n)\n", encoding="utf-8")
    (root / "scripts" / "low_precision").mkdir()
    script = root / "scripts" / "low_precision" / "run-qwen3-30b-a3b-fp8.sh"
    script.write_text(before + TRAIN, encoding="utf-8")
    return script


def _bash_reaches(script: Path, before: str, cwd: Path) -> bool:
    probe = script.with_name("probe.sh")
    probe.write_text(before + "echo reached\n", encoding="utf-8")
    proc = subprocess.run(["bash", str(probe)], capture_output=True, text=True, cwd=cwd,
                          env={"PATH": "/usr/bin:/bin"}, timeout=30, check=False)
    probe.unlink()
    return "reached" in proc.stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_script_stops_where_bash_stops_it(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before, stops = CASES[name]
    script = _checkout(tmp_path, before)
    monkeypatch.chdir(tmp_path)
    if stops is not None:  # None: bash's answer depends on what is outside the tree
        assert _bash_reaches(script, before, tmp_path) is not stops
    if not stops:
        config = read_launch(script)
        assert config.flags["pipeline_model_parallel_size"].value == "4"
        return
    with pytest.raises(ScriptExits) as stopped:
        read_launch(script)
    assert "`set -e` (line 2) ends the script" in stopped.value.what


def test_the_headline_names_the_line_and_the_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _checkout(tmp_path, SLIME)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScriptExits) as stopped:
        read_launch(script)
    assert stopped.value.line == 5
    assert "exits at line 5 (`source \"${SCRIPT_DIR}/../scripts/models/qwen3-30B-A3B.sh\"`)" in stopped.value.what
    assert "scripts/scripts/models/qwen3-30B-A3B.sh" in stopped.value.what


def test_the_right_path_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _checkout(tmp_path, SLIME.replace("../scripts/models", "../models"))
    monkeypatch.chdir(tmp_path)
    assert read_launch(script).flags["num_layers"].value == "48"


def test_launched_from_outside_the_checkout_a_relative_path_is_unknown(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """From /elsewhere, scripts/env/missing.sh is not in the tree this audit reads: not judged."""
    script = _checkout(tmp_path / "slime", "#!/bin/bash\nset -e\nsource scripts/env/missing.sh\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert read_launch(script).flags["pipeline_model_parallel_size"].value == "4"


def test_a_link_out_of_the_tree_is_not_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """scripts/shared -> a directory of the cluster's (absent here): the file may be there."""
    before = "#!/bin/bash\nset -e\nsource scripts/shared/env.sh\n"
    script = _checkout(tmp_path / "slime", before)
    (tmp_path / "slime" / "scripts" / "shared").symlink_to(tmp_path / "mnt" / "shared")
    monkeypatch.chdir(tmp_path / "slime")
    assert read_launch(script).flags["pipeline_model_parallel_size"].value == "4"


def test_no_checkout_around_the_script_is_not_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _checkout(tmp_path, "#!/bin/bash\nset -e\nsource scripts/env/missing.sh\n")
    (tmp_path / "pyproject.toml").unlink()
    monkeypatch.chdir(tmp_path)
    assert read_launch(script).flags["pipeline_model_parallel_size"].value == "4"
