"""Whether a sourced file is surely absent never rests on where the audit itself runs (issue 22
item 4, reviewer's finding on turn 9).

The construct: THUDM/slime scripts/low_precision/run-qwen3-30b-a3b-fp8.sh (commit
624b824a898ab0ec1fcb4d373004c7f3852bf515) :27-28 sources `${SCRIPT_DIR}/../scripts/models/...`,
an absolute path the script builds from its own location; that is judged. A relative `source
scripts/models/m.sh` (or one built from `$(pwd)`) opens a file relative to the directory the job
is launched from, which the script does not state: run from a subfolder of the checkout it is
absent here and present on the cluster, so it is never judged absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import read_launch

TRAIN = ("torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size ${PP} "
         "--tensor-model-parallel-size 1 --num-layers 8\n")


def _checkout(root: Path, source: str) -> Path:
    (root / "scripts" / "models").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'm'\n", encoding="utf-8")
    (root / "scripts" / "models" / "m.sh").write_text("PP=2\n", encoding="utf-8")
    script = root / "scripts" / "run.sh"
    script.write_text(f"#!/bin/bash\nset -e\n{source}\n{TRAIN}", encoding="utf-8")
    return script


@pytest.mark.parametrize("source", ["source scripts/models/m.sh", "source $(pwd)/scripts/models/m.sh",
                                    'source "$PWD/scripts/models/m.sh"',
                                    'ROOT=$(pwd)\nsource "$ROOT/scripts/models/m.sh"'])
def test_a_path_from_the_launch_directory_run_from_a_subfolder_is_not_judged(
        source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _checkout(tmp_path, source)
    monkeypatch.chdir(tmp_path / "scripts")  # absent from here; present from the checkout's root
    config = read_launch(script)
    assert isinstance(config.flags["pipeline_model_parallel_size"].value, Symbolic)


def test_from_the_checkout_root_the_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _checkout(tmp_path, "source scripts/models/m.sh")
    monkeypatch.chdir(tmp_path)
    assert read_launch(script).flags["pipeline_model_parallel_size"].value == "2"
