"""The files a recorded run named on its command line: its script and the files its arguments
name (a rank's meta line: `argv`, read from `cwd`; and `launch`, the command `record` ran, such
as `bash run.sh`).

A command that judges the trace never opens them, so `reads` (which sees what this process
opens) never learns of them; yet `report --trace T -o ring.py` would replace the very script the
run was recorded from. Each is noted as an input of the command (`reads.note`), so that `-o`
refuses it as it refuses a file the command read. A trace of an earlier recorder has no `cwd`:
its relative words are read from this command's working directory, where the user most likely
recorded it; a recorded `cwd` is read too, and so is this command's own working directory (a job
folder copied or moved since holds its script there).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from auditor import reads

WHY = "a file the recorded run names on its command line (its meta line's argv or launch)"


def named_files(argv: list[str], cwd: str | None) -> list[str]:
    """The regular files `argv`'s words name, each word whole and the value of `--key=value`,
    read from `cwd` and from this process's working directory."""
    words = [w for word in argv for w in (word, word.partition("=")[2]) if w]
    bases = dict.fromkeys(b for b in (cwd, os.getcwd()) if b)
    return [path for path in dict.fromkeys(os.path.join(base, w) for base in bases for w in words)
            if os.path.isfile(path)]


def note(metas: Iterable[dict[str, Any]]) -> None:
    """Note the files every rank's meta line names as inputs of this command."""
    seen: set[tuple[tuple[str, ...], str | None]] = set()
    commands = ((m.get("argv"), m.get("cwd")) for meta in metas
                for m in (meta, _launch(meta)))
    for argv, cwd in commands:
        if not isinstance(argv, list) or not all(isinstance(w, str) for w in argv):
            continue
        key = (tuple(argv), cwd if isinstance(cwd, str) else None)
        if key in seen:
            continue
        seen.add(key)
        for path in named_files(list(key[0]), key[1]):
            reads.note(path, WHY)


def _launch(meta: dict[str, Any]) -> dict[str, Any]:
    launch = meta.get("launch")
    return launch if isinstance(launch, dict) else {}
