"""The bounded reader of files a launch script names (bash/textfile.py) and the snapshot-directory
rule (bash/checkout_copy.py), unit by unit: what the scans in tests/realscripts/
test_nemo_rl_snapshot_reuse.py rest on (NVIDIA-NeMo/RL@7ea279abfb tools/code_snapshot.sh:23-44)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from auditor.bash import checkout_copy, textfile

RULE = {"script": "tools/code_snapshot.sh", "root": "..", "folder_default": "code_snapshots",
        "marks": ["EXP_NAME=$1", 'SNAPSHOT_DIR="$PROJECT_ROOT/${CODE_SNAPSHOT_DIRNAME}/${EXP_NAME}"']}
TOOL = 'EXP_NAME=$1\nSNAPSHOT_DIR="$PROJECT_ROOT/${CODE_SNAPSHOT_DIRNAME}/${EXP_NAME}"\necho ${SNAPSHOT_DIR}\n'


def test_a_fifo_is_refused_unopened(tmp_path: Path) -> None:
    fifo = tmp_path / "env.sh"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    with pytest.raises(OSError, match="not a regular file"):
        textfile.read_bounded(str(fifo), "not a regular file")


def test_a_file_larger_than_a_launch_script_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "env.sh"
    big.write_bytes(b"#" * (textfile.MAX_SOURCED + 1))
    with pytest.raises(OSError, match="larger"):
        textfile.read_bounded(str(big), "missing")


def test_a_launch_file_is_read_without_bom_or_nul(tmp_path: Path) -> None:
    f = tmp_path / "env.sh"
    f.write_bytes(b"\xef\xbb\xbfPP=4\0\n")
    assert textfile.read_bounded(str(f), "missing") == (str(f), "PP=4\n")


def _checkout(tmp_path: Path, tool: str = TOOL) -> str:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "code_snapshot.sh").write_text(tool)
    return str(tmp_path / "tools" / "code_snapshot.sh")


def test_a_new_copy_stands_for_its_checkout(tmp_path: Path) -> None:
    tool = _checkout(tmp_path)
    where, root = checkout_copy.printed(RULE, tool, "exp1", "", resolved=False)
    assert where == str(tmp_path / "code_snapshots" / "exp1") and root == str(tmp_path)
    assert checkout_copy.in_copy(where + "/examples/c.yaml", {where: root}) == f"{tmp_path}/examples/c.yaml"
    assert checkout_copy.copied_root(where + "/examples", {where: root}) == str(tmp_path)


def test_a_kept_copy_is_read_as_it_is(tmp_path: Path) -> None:
    tool = _checkout(tmp_path)
    (tmp_path / "code_snapshots" / "exp1").mkdir(parents=True)
    assert checkout_copy.printed(RULE, tool, "exp1", "", resolved=False) == (
        str(tmp_path / "code_snapshots" / "exp1"), None)


@pytest.mark.parametrize("name, folder", [(None, ""), ("exp1", None), ("..", ""), ("a/b", ""), ("exp1", "../x")])
def test_an_unknown_or_escaping_name_leaves_the_directory_unknown(tmp_path: Path, name, folder) -> None:
    assert checkout_copy.printed(RULE, _checkout(tmp_path), name, folder, resolved=False) is None


def test_a_tool_without_the_rules_lines_is_not_followed(tmp_path: Path) -> None:
    assert checkout_copy.printed(RULE, _checkout(tmp_path, "echo /somewhere\n"), "exp1", "", resolved=False) is None


def test_a_file_reporting_size_zero_is_read_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """procfs files (`source /proc/self/pagemap`) report size 0 however much they hold: the read
    itself is bounded (h33-review6 Minor)."""
    big = tmp_path / "pagemap"
    big.write_bytes(b"#" * (textfile.MAX_SOURCED + 1))
    monkeypatch.setattr(os.path, "getsize", lambda _path: 0)
    with pytest.raises(OSError, match="larger"):
        textfile.read_bounded(str(big), "missing")
    small = tmp_path / "env.sh"
    small.write_bytes(b"#" * textfile.MAX_SOURCED)
    assert len(textfile.read_bounded(str(small), "missing")[1]) == textfile.MAX_SOURCED
