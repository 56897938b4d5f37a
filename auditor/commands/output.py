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
