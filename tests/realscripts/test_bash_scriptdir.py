"""Issue 22 item 4: the script's own directory. Launch scripts find the files they ship with
through `$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)` and its shorter forms;
bash gives the directory holding the script, so a `source "${SCRIPT_DIR}/models/x.sh"` is read,
not left unknown.

Written after THUDM/slime scripts/run-qwen3-4B.sh (commit 624b824a898ab0ec1fcb4d373004c7f3852bf515):
`SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"`, then
`source "${SCRIPT_DIR}/models/qwen3-4B.sh"`, whose `MODEL_ARGS=(--num-layers 36 ...)` the command
expands.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from auditor.config.launch import parse_launch

MODEL = """MODEL_ARGS=(
   --swiglu
   --num-layers 36
   --num-attention-heads 32
)
"""

SCRIPT = """#!/bin/bash
set -ex
SCRIPT_DIR={idiom}
source "${{SCRIPT_DIR}}/models/qwen3-4B.sh"
torchrun --nproc-per-node 8 pretrain_gpt.py \\
   ${{MODEL_ARGS[@]}} \\
   --tensor-model-parallel-size 2
"""

IDIOMS = [
    '"$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"',
    '$(cd "$(dirname "$0")" && pwd)',
    '"$(dirname "$0")"',
    '$(dirname $(readlink -f $0))',
    '"$(realpath "$(dirname "${BASH_SOURCE[0]}")")"',
]


def _write(tmp_path: Path, idiom: str) -> Path:
    (tmp_path / "scripts" / "models").mkdir(parents=True)
    (tmp_path / "scripts" / "models" / "qwen3-4B.sh").write_text(MODEL, encoding="utf-8")
    path = tmp_path / "scripts" / "run-qwen3-4B.sh"
    path.write_text(SCRIPT.format(idiom=idiom), encoding="utf-8")
    return path


@pytest.mark.parametrize("idiom", IDIOMS)
def test_the_script_directory_idiom_finds_the_sourced_file(tmp_path, idiom):
    path = _write(tmp_path, idiom)
    config = parse_launch(path.read_text(encoding="utf-8"), str(path))
    assert config.flags["num_layers"].value == "36"


def test_a_relative_script_path_resolves_from_the_audit_directory(tmp_path, monkeypatch):
    _write(tmp_path, IDIOMS[0])
    monkeypatch.chdir(tmp_path)
    path = os.path.join("scripts", "run-qwen3-4B.sh")
    config = parse_launch(Path(path).read_text(encoding="utf-8"), path)
    assert config.flags["num_layers"].value == "36"


def test_another_command_substitution_stays_unknown(tmp_path):
    path = _write(tmp_path, '"$(cd "$(dirname "$0")/.." && pwd)"')
    config = parse_launch(path.read_text(encoding="utf-8"), str(path))
    assert "num_layers" not in config.flags
