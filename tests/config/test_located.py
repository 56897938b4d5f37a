"""located.shown: a file of a checkout named from the checkout's root, so a cause's FILE:LINE
fits the first screen and names a path a user of another clone can act on."""

from __future__ import annotations

from pathlib import Path

from auditor.config.located import shown, shown_at


def test_a_file_of_a_checkout_is_named_from_its_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "examples").mkdir()
    script = tmp_path / "examples" / "run.sh"
    script.write_text("echo\n")
    assert shown(script) == "examples/run.sh"
    assert shown_at(f"{script}:8") == "examples/run.sh:8"


def test_a_relative_path_or_one_outside_a_checkout_is_as_given(tmp_path: Path) -> None:
    loose = tmp_path / "run.sh"
    loose.write_text("echo\n")
    assert shown("examples/run.sh") == "examples/run.sh"
    assert shown(loose) == str(loose)
    assert shown_at("not a location") == "not a location"
