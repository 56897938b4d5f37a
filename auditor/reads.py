"""The files this command has opened for reading, so that its output never replaces one of them.

Every reader would have to remember to register what it reads, and one that forgot (a sourced
script, a baseline, a trace's rank files, a target's sources) would let `-o` write over the
user's input. Python's own audit event `open` (PEP 578) is raised for every file opened in this
process, through `open`, `Path.read_*`, `os.open`, tarfile and zipfile alike, so one hook sees
them all, whoever reads. A file opened to be created or written is not an input.

`watch()` starts a command's set (the CLI calls it once per command); `note()` adds a path read
outside this process; `input_named()` answers whether a path is the same file as any of them
(same device and inode: through symbolic links, hard links and relative spellings).

A folder read by listing it (a trace's rank files, Flight Recorder dumps, a folder of NCCL logs)
is an input as a whole: a file written anywhere inside it joins what the next run of the command
reads (a report named rank-9.jsonl becomes a rank). Its reader says so (`note_folder()`); the
audit events of listing are not used, as imports list every folder on sys.path.
`folder_holding()` answers whether a path lies inside one.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_opened: set[str] | None = None  # absolute paths; None: not watching
_folders: set[str] = set()  # absolute paths of the folders read by listing them
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
    _folders.clear()
    if not _hooked:
        sys.addaudithook(_on_event)  # hooks cannot be removed: one, installed once
        _hooked = True


def note(path: str | os.PathLike[str]) -> None:
    """A file this command reads in another process (a worker, a rank), or reads later."""
    if _opened is not None:
        _opened.add(os.path.abspath(os.fspath(path)))


def note_folder(path: str | os.PathLike[str]) -> None:
    """A folder this command reads every (matching) file of: nothing may be written inside it."""
    if _opened is not None:
        _folders.add(os.path.abspath(os.fspath(path)))


def folder_holding(path: str | os.PathLike[str]) -> str | None:
    """The input folder (as noted) that `path` lies inside at any depth, or is, or None. Matched
    by device and inode along `path`'s existing ancestors: through links and other spellings."""
    if not _folders:
        return None
    stats: dict[tuple[int, int], str] = {}
    for folder in sorted(_folders):
        try:
            st = os.stat(folder)
        except OSError:
            continue
        stats.setdefault((st.st_dev, st.st_ino), folder)
    here = os.path.realpath(os.fspath(path))  # real ancestors: `..` after a link goes where it leads
    while True:
        try:
            st = os.stat(here)
            if (st.st_dev, st.st_ino) in stats:
                return stats[(st.st_dev, st.st_ino)]
        except OSError:
            pass
        up = os.path.dirname(here)
        if up == here:
            return None
        here = up


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
