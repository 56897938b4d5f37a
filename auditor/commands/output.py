"""Writing a command's output to stdout or `-o FILE`, whole or not at all."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from auditor.errors import InputError

if TYPE_CHECKING:
    from auditor.report import formats


def emit(text: str, path: str | None) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InputError(path, "the output's directory does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".p2paudit-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
    os.replace(tmp, path)


HTML_ON_TERMINAL = "report.html"
COMMANDS = {"run": "report"}  # a kind written by a command of another name


def destination(path: str | None, for_terminal: bool) -> str | None:
    """Where to write: `path` as given; but a format not for a terminal (HTML) asked for on one
    goes to report.html (a thousand lines of markup help nobody there). Piped output is left as
    it is."""
    if path is None and not for_terminal and sys.stdout.isatty():
        return HTML_ON_TERMINAL
    return path


def emit_report(doc: dict[str, Any], kind: str, fmt: str, path: str | None,
                context: formats.Context | None = None) -> None:
    """`doc` rendered by the `fmt` reporter, emitted to `destination(path, ...)`, saying where
    the file went when it chose one. The renderers are imported here: `emit` alone (doctor and
    repro, once per rank) need not load them (~0.1 s)."""
    from auditor.report import formats

    reporter = formats.reporter(fmt)
    text = reporter.render(doc, kind, context or formats.Context())
    target = destination(path, reporter.for_terminal)
    emit(text, target)
    if target != path:
        print(f"p2paudit {COMMANDS.get(kind, kind)}: wrote {os.path.abspath(target)} (HTML is not for a terminal; "
              f"-o - prints it)", file=sys.stderr)
