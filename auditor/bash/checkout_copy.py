"""The directory a checkout's snapshot tool prints (rules [[checkout_copy]], NeMo-RL's
tools/code_snapshot.sh): a new copy of the checkout's files, or a copy kept from an earlier run
that the tool prints as it is. Which one, and where, follows the tool's own lines the rules name."""

from __future__ import annotations

import os
import re

from auditor.bash.textfile import read_bounded

# One directory name the tool joins in (no `/`, not `.` or `..`: the folder stays below the root).
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*")


def printed(copy: dict, tool: str, name: str | None, folder: str | None, resolved: bool
            ) -> tuple[str, str | None] | None:
    """(the directory `tool` prints, the checkout root it is a new copy of, else None where it is a
    kept copy, read as it is here) for the rule `copy`, the tool's first argument `name` and its
    `folder_var`'s value `folder` ("": unset or empty, the rule's default); None where the tool is
    not the rule's, its root is not here, or `name` or `folder` (None: not known statically)
    leaves the directory unknown. `resolved`: printed through realpath."""
    root = os.path.normpath(os.path.join(os.path.dirname(tool), copy["root"]))
    if os.path.normpath(os.path.join(root, copy["script"])) != tool:
        return None
    try:
        _, body = read_bounded(tool, "not a regular file")  # never a FIFO or a device (it would wait)
    except OSError:
        return None
    if not all(mark in body for mark in copy["marks"]) or not os.path.isdir(root):
        return None
    if folder is None:
        return None
    folder = folder or copy["folder_default"]  # `${CODE_SNAPSHOT_DIRNAME:-code_snapshots}`
    if name is None or not _PART.fullmatch(name) or not all(_PART.fullmatch(p) for p in folder.split("/")):
        return None
    where = os.path.join(root, folder, name)
    if os.path.lexists(where):  # kept from an earlier run: printed without copying (the rule's `kept`)
        if not os.path.isdir(where):
            return None  # the tool's `mkdir -p` fails there
        return (os.path.realpath(where) if resolved else where), None
    return (os.path.realpath(where) if resolved else where), root


def in_copy(path: str, copies: dict[str, str]) -> str | None:
    """`path` (absolute, normalised) in the checkout a new copy is made of, where it lies in one of
    `copies` (the printed directory: its root); None where it lies in none of them."""
    for where, root in copies.items():
        if path == where or path.startswith(where.rstrip("/") + "/"):
            return root + path[len(where.rstrip("/")):]
    return None


def copied_root(path: str | None, copies: dict[str, str]) -> str | None:
    """The checkout root whose new copy `path` (a directory the command runs in) lies in; None
    where it lies in none (or is not known, or relative)."""
    if path is None or not os.path.isabs(path):
        return None
    path = os.path.normpath(path)
    return next((root for where, root in copies.items() if in_copy(path, {where: root}) is not None), None)
