"""config.rule_checkout: the checkout a rule was read on is found above an entry only where the file
the rule's `source` cites holds the rule's `code` -- a same-named file without it, or one too far
up, is not that framework's checkout (a user's own `megatron/` tree must not be taken for it)."""

from __future__ import annotations

from pathlib import Path

from auditor.config.rule_checkout import DEPTH, rule_checkout

SOURCE = "NVIDIA/Megatron-LM@0123abc megatron/training/arguments.py:42"
CODE = "def parse_args(extra_args_provider=None"


def _tree(root: Path, text: str) -> Path:
    (root / "megatron/training").mkdir(parents=True)
    (root / "megatron/training/arguments.py").write_text(text, encoding="utf-8")
    entry = root / "examples/gpt3/train.py"
    entry.parent.mkdir(parents=True)
    entry.write_text("print('x')\n", encoding="utf-8")
    return entry


def test_the_checkout_whose_cited_file_holds_the_code_is_found(tmp_path: Path) -> None:
    entry = _tree(tmp_path, f"{CODE}, ignore_unknown_args=False):\n    pass\n")
    assert rule_checkout(entry, SOURCE, CODE) == tmp_path


def test_a_same_named_file_without_the_code_is_not_the_checkout(tmp_path: Path) -> None:
    entry = _tree(tmp_path, "def parse_args():\n    pass\n")
    assert rule_checkout(entry, SOURCE, CODE) is None


def test_no_cited_file_above_the_entry_is_none(tmp_path: Path) -> None:
    entry = tmp_path / "a/train.py"
    entry.parent.mkdir(parents=True)
    entry.write_text("", encoding="utf-8")
    assert rule_checkout(entry, SOURCE, CODE) is None


def test_an_unreadable_file_is_passed_over(tmp_path: Path) -> None:
    entry = _tree(tmp_path, "")
    (tmp_path / "megatron/training/arguments.py").write_bytes(b"\xff\xfe\x00bad")
    assert rule_checkout(entry, SOURCE, CODE) is None


def test_the_search_stops_depth_directories_up(tmp_path: Path) -> None:
    (tmp_path / "megatron/training").mkdir(parents=True)
    (tmp_path / "megatron/training/arguments.py").write_text(CODE, encoding="utf-8")
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(DEPTH)], "train.py")
    deep.parent.mkdir(parents=True)
    deep.write_text("", encoding="utf-8")
    assert rule_checkout(deep, SOURCE, CODE) is None
    shallow = tmp_path.joinpath(*[f"d{i}" for i in range(DEPTH - 1)], "train.py")
    assert rule_checkout(shallow, SOURCE, CODE) == tmp_path
