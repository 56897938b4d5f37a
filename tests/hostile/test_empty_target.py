"""An empty `--target ''` (a CI variable that expanded to nothing: `--target "$MCORE"`) was read
as the current directory and scanned as an unrecognised package (exit 1, the targets line naming
the cwd); it is bad input, one line, for every command that takes targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import cli
from auditor.errors import EXIT_INPUT

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "glm5_1_lora_pp4.sh"


@pytest.mark.parametrize("argv", [
    ["scan", "--config", str(SEED), "--target", ""],
    ["scan", "--config", str(SEED), "--target", "  "],
    ["fix", "--config", str(SEED), "--target", ""],
    ["sites", ""],
    ["sites", "--target", ""],
])
def test_an_empty_target_is_bad_input(capsys, argv):
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    assert done.value.code == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"p2paudit {argv[0]}: error: ") and "empty target" in err, err
    assert len(err.splitlines()) == 1
