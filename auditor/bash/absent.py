"""Whether the file a `source PATH` opens is surely absent, so that bash's `source` surely fails
(status 1; under `set -e` the script ends there) (issue 22 item 4), or a config file a run loads
from its launch directory surely absent from every directory it may start in (item 5).

THUDM/slime@624b824a89 scripts/low_precision/run-qwen3-30b-a3b-fp8.sh:28 sources
`${SCRIPT_DIR}/../scripts/models/qwen3-30B-A3B.sh`, a path its checkout does not hold. This
machine can say a file is absent only for the tree it reads: the checkout around the launch
script (the nearest directory at or above it holding one of CHECKOUT_MARKERS), the same tree
at the same commit as the cluster's. A path outside it (a home directory, /mnt, /etc), one
reached through a link out of it, or a name bash looks up on $PATH is never judged absent; nor
is one relative to the launch directory (or built from `pwd`): the script does not state that
directory, and the one this audit runs in may be another (a subfolder of the checkout).
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

# `.gitmodules` lies only at a repository's top level, and stays in a tree without `.git` (an
# archive download, alibaba/Pai-Megatron-Patch whose root holds no setup.py or pyproject.toml).
CHECKOUT_MARKERS = (".git", "setup.py", "pyproject.toml", ".gitmodules")


def checkout_root(path: str) -> Path | None:
    """The checkout a file lies in: the nearest directory at or above its own holding one of
    CHECKOUT_MARKERS; None where none does."""
    here = Path(path).resolve().parent
    return next((d for d in (here, *here.parents) if any((d / m).exists() for m in CHECKOUT_MARKERS)), None)


def unpopulated_submodules(checkout: Path) -> list[str]:
    """The paths the checkout's .gitmodules names (relative, as written there) that are absent
    or empty here: a plain clone or an archive leaves them so, where a recursive clone fills
    them (alibaba/Pai-Megatron-Patch's backends/megatron/Megatron-LM-*)."""
    try:
        text = (checkout / ".gitmodules").read_text(errors="replace")
    except OSError:
        return []
    out = []
    for name in re.findall(r"^\s*path\s*=\s*(.+?)\s*$", text, re.M):
        here = checkout / name
        if not here.is_dir() or not any(here.iterdir()):
            out.append(name)
    return out


def surely_absent(name: str, script: str) -> Path | None:
    """The file `source NAME` would open, resolved (links followed, `..` taken) and relative to
    the checkout around `script`, where it surely does not exist: NAME is absolute (callers pass
    only paths the script builds from its own location) and lies, resolved, inside that
    checkout; None otherwise (present, or not judged here)."""
    if not os.path.isabs(name):
        return None
    opened = name
    root = checkout_root(script)
    if root is None:
        return None
    try:
        os.stat(opened)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            return None  # a permission this machine lacks says nothing about the cluster's
    else:
        return None
    resolved = Path(os.path.realpath(opened))
    return resolved.relative_to(root) if resolved.is_relative_to(root) else None


def absent_from_launch_dirs(name: str, entry: str, script: str, limit: int = 20000) -> tuple[Path, int] | None:
    """(the file, relative to the checkout, the count of launch directories judged) where a
    relative `name`, opened from the launch directory, is surely absent: the script does not
    state that directory, so every directory of the checkout around `script` from which the
    run's relative `entry` opens a file of that checkout is one it may start in, and from each
    `name` resolves (links followed, `..` taken) inside the checkout to no file. None where
    not certain: an absolute `name` or `entry`, no checkout, no such directory, one from which
    the file is there or lies outside the checkout, or more than `limit` directories."""
    if os.path.isabs(name) or os.path.isabs(entry):
        return None
    root = checkout_root(script)
    if root is None:
        return None
    found: Path | None = None
    judged = 0
    for count, (here, dirs, _) in enumerate(os.walk(root)):
        dirs[:] = [d for d in dirs if d != ".git"]
        if count >= limit:
            return None
        opened = Path(os.path.realpath(os.path.join(here, entry)))
        if not (opened.is_relative_to(root) and opened.is_file()):
            continue
        target = Path(os.path.realpath(os.path.join(here, name)))
        if not target.is_relative_to(root):
            return None
        try:
            os.lstat(target)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                return None
        else:
            return None
        judged += 1
        found = found or target.relative_to(root)
    return (found, judged) if found is not None else None


def nowhere_in_checkout(name: str, script: str, limit: int = 20000) -> Path | None:
    """The checkout around `script` where the relative `name`, opened from any of its
    directories, is no file (links followed): wherever in the checkout a run starts, it finds
    none. None where one directory opens a file, `name` is absolute, no checkout is around
    `script`, or it has more than `limit` directories."""
    if os.path.isabs(name):
        return None
    root = checkout_root(script)
    if root is None:
        return None
    for count, (here, dirs, _) in enumerate(os.walk(root)):
        dirs[:] = [d for d in dirs if d != ".git"]
        if count >= limit or os.path.isfile(os.path.join(here, name)):
            return None
    return root
