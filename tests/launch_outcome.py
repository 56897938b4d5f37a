"""What parse_launch makes of a script a test writes out: its NOT A PIPELINE RUN or its
"could not be followed" message, one copy for the tests of inert commands and tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.config.launch import CommandNotFollowed, NotAPipelineRun, parse_launch


def scan(text: str, script: Path) -> None:
    """Write `text` to `script` (a reader may open it beside the entry) and parse it."""
    script.write_text(text)
    parse_launch(text, str(script))


def not_pipeline(text: str, script: Path) -> str:
    with pytest.raises(NotAPipelineRun) as caught:
        scan(text, script)
    return caught.value.what


def undecided(text: str, script: Path) -> str:
    with pytest.raises(CommandNotFollowed) as caught:
        scan(text, script)
    return str(caught.value)
