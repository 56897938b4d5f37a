"""Output never drives a terminal (auditor/terminal.py): a control character an input holds is
shown as an escape, not obeyed, so a launch script cannot overwrite the FINDINGS line with a
carriage return or reorder a line with a bidirectional override."""

from __future__ import annotations

import io

from auditor.terminal import Visible, visible


def test_a_carriage_return_cannot_overwrite_the_line() -> None:
    assert visible("FINDINGS: 2\rCLEAN      ") == "FINDINGS: 2\\rCLEAN      "


def test_escapes_show_what_the_input_held() -> None:
    assert visible("\x1b[2K") == "\\x1b[2K"          # ESC: erase line
    assert visible("\x9b2K") == "\\x9b2K"            # C1 CSI, 8-bit
    assert visible("a\x00b\x07") == "a\\x00b\\x07"   # NUL, BEL
    assert visible("\x0b\x0c\x7f") == "\\v\\f\\x7f"
    assert visible("run\u202eexe.sh") == "run\\u202eexe.sh"  # right-to-left override
    assert visible("\u2066x\u2069") == "\\u2066x\\u2069"     # isolates


def test_newline_tab_and_text_are_kept() -> None:
    text = "scan:\tCLEAN\nnext line, ünïcode — kept\n"
    assert visible(text) == text


def test_the_stream_writes_only_visible_text() -> None:
    inner = io.StringIO()
    stream = Visible(inner)
    stream.write("bad input: x\x1b]0;title\x07\n")
    stream.flush()  # other attributes are the inner stream's
    assert inner.getvalue() == "bad input: x\\x1b]0;title\\x07\n"
