"""Writing a command's output to stdout or `-o FILE`, whole or not at all."""

from __future__ import annotations

import os
import sys
import tempfile

from auditor.errors import InputError


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


def destination(path: str | None, fmt: str) -> str | None:
    """Where to write: `path` as given; but HTML asked for on a terminal goes to report.html
    (a thousand lines of markup help nobody there). Piped output is left as it is."""
    if path is None and fmt == "html" and sys.stdout.isatty():
        return HTML_ON_TERMINAL
    return path


def emit_report(text: str, path: str | None, fmt: str, command: str) -> None:
    """`emit` to `destination(path, fmt)`, saying where the file went when it chose one."""
    target = destination(path, fmt)
    emit(text, target)
    if target != path:
        print(f"p2paudit {command}: wrote {os.path.abspath(target)} (HTML is not for a terminal; "
              f"-o - prints it)", file=sys.stderr)
