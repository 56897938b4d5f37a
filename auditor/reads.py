"""The files this command has opened for reading, so that its output never replaces one of them.

Every reader would have to remember to register what it reads, and one that forgot (a sourced
script, a baseline, a trace's rank files, a target's sources) would let `-o` write over the
user's input. Python's own audit event `open` (PEP 578) is raised for every file opened in this
process, through `open`, `Path.read_*`, `os.open`, tarfile and zipfile alike, so one hook sees
them all, whoever reads. A file opened to be created or written is not an input.

`watch()` starts a command's set (the CLI calls it once per command); `note()` adds a path read
outside this process, or an input of the run the command judges, saying how it is one (`why`);
`input_named()` answers whether a path is the same file as any of them (same device and inode:
through symbolic links, hard links and relative spellings).

A folder read by listing it is an input where its reader would pick a new file up: a file
written there joins what the next run of the command reads (a report named rank-9.jsonl becomes
a rank). A trace reads the rank-N.jsonl and hang-rank-N.json at its top level, a folder of NCCL
logs every file at its top level, a Flight Recorder folder every file at any depth (torch's
reader walks subfolders). Its reader says so (`note_folder()`, with what it picks up); the audit
events of listing are not used, as imports list every folder on sys.path. `folder_holding()`
answers whether a path lies where one would read it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

_opened: set[str] | None = None  # absolute paths; None: not watching
_why: dict[str, str] = {}  # absolute path -> how a noted file is an input, where not read here
# absolute paths of the folders read by listing them -> (read at any depth, the names it reads)
_folders: dict[str, tuple[bool, Callable[[str], bool]]] = {}
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
    _why.clear()
    _folders.clear()
    if not _hooked:
        sys.addaudithook(_on_event)  # hooks cannot be removed: one, installed once
        _hooked = True


def note(path: str | os.PathLike[str], why: str = "") -> None:
    """A file this command reads in another process (a worker, a rank), or reads later; or an
    input of the run it judges, `why` saying how (a recorded run's script)."""
    if _opened is not None:
        absolute = os.path.abspath(os.fspath(path))
        _opened.add(absolute)
        if why:
            _why[absolute] = why


def why(path: str) -> str:
    """How `path` (as `input_named` gave it) is an input where it was noted so; "" otherwise."""
    return _why.get(path, "")


def _every(name: str) -> bool:
    """`note_folder`'s default: every file name is read."""
    return True


def note_folder(path: str | os.PathLike[str], deep: bool = False,
                picks: Callable[[str], bool] = _every) -> None:
    """A folder this command reads by listing it: the files named as `picks` accepts at its top
    level, or (`deep`) every file at any depth. No output may be written where it would read."""
    if _opened is not None:
        _folders[os.path.abspath(os.fspath(path))] = (deep, picks)


def folder_holding(path: str | os.PathLike[str]) -> tuple[str, bool] | None:
    """(the input folder as noted, whether it is read at any depth) where its reader would read
    `path` (or `path` is that folder), else None. Matched by device and inode along `path`'s
    existing ancestors: through links and other spellings."""
    if not _folders:
        return None
    stats: dict[tuple[int, int], str] = {}
    for folder in sorted(_folders):
        try:
            st = os.stat(folder)
        except OSError:
            continue
        stats.setdefault((st.st_dev, st.st_ino), folder)
    target = os.path.realpath(os.fspath(path))  # real ancestors: `..` after a link goes where it leads
    here, depth = target, 0
    while True:
        try:
            st = os.stat(here)
            noted = stats.get((st.st_dev, st.st_ino))
            if noted is not None:
                deep, picks = _folders[noted]
                if depth == 0 or deep or depth == 1 and picks(os.path.basename(target)):
                    return noted, deep
        except OSError:
            pass
        up = os.path.dirname(here)
        if up == here:
            return None
        here, depth = up, depth + 1


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
