"""The files this command has opened for reading, so that its output never replaces one of them.

Every reader would have to remember to register what it reads, and one that forgot (a sourced
script, a baseline, a trace's rank files, a target's sources) would let `-o` write over the
user's input. Python's own audit event `open` (PEP 578) is raised for every file opened in this
process, through `open`, `Path.read_*`, `os.open`, tarfile and zipfile alike, so one hook sees
them all, whoever reads. A file opened to be created or written is not an input.

`watch()` starts a command's set (the CLI calls it once per command); `note()` adds a path read
outside this process; `input_named()` answers whether a path is the same file as any of them
(same device and inode: through symbolic links, hard links and relative spellings).
"""

from __future__ import annotations

import os
import sys
from typing import Any

_opened: set[str] | None = None  # absolute paths; None: not watching
_hooked = False
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _on_event(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or _opened is None:
        return
    path, mode, flags = args
    if isinstance(path, int) or path is None:
        return
    if mode is not None:  # open(): "r", "rb", "r+"; writes are "w", "a", "x"
        if not isinstance(mode, str) or any(c in mode for c in "wax"):
            return
    elif flags & _WRITE or flags & os.O_ACCMODE == os.O_WRONLY:  # os.open()
        return
    try:
        _opened.add(os.path.abspath(os.fsdecode(path)))
    except (TypeError, ValueError, OSError):
        pass


def watch() -> None:
    """Start an empty set of the files read from now on."""
    global _opened, _hooked
    _opened = set()
    if not _hooked:
        sys.addaudithook(_on_event)  # hooks cannot be removed: one, installed once
        _hooked = True


def note(path: str | os.PathLike[str]) -> None:
    """A file this command reads in another process (a worker, a rank), or reads later."""
    if _opened is not None:
        _opened.add(os.path.abspath(os.fspath(path)))


def input_named(path: str) -> str | None:
    """The input (as first opened) that `path` is the same file as, or None."""
    if not _opened:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None  # nothing there yet: no input
    for seen in sorted(_opened):
        try:
            other = os.stat(seen)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return seen
    return None
