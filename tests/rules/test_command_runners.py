"""rules/stacks.toml `command_runners` is the one list of the calls that start a process running
another program, read against the standard library itself: each entry names a callable there,
and every process starter of subprocess, os (exec*, spawn*, posix_spawn*, system, popen), asyncio
(create_subprocess_*, also as asyncio.subprocess spells them) and pty is listed. A starter left
out was neither a command run nor code unseen: an entry that starts the torchrun it builds with
`subprocess.getoutput(cmd)` read NOT A PIPELINE RUN (review r36-falseclean 3)."""

from __future__ import annotations

import asyncio
import asyncio.subprocess
import importlib
import os
import pty
import re
import subprocess

from auditor import rulebook

RUNNERS = rulebook.load("stacks").data["no_pipeline"]["command_runners"]
# subprocess's public callables that start nothing: a result record (its exceptions are excluded
# by their type)
_NOT_STARTERS = {"CompletedProcess"}
_OS_STARTER = re.compile(r"exec[lv]p?e?|spawn[lv]p?e?|posix_spawnp?|system|popen")


def _stdlib_starters() -> set[str]:
    out = {f"subprocess.{n}" for n in subprocess.__all__
           if callable(obj := getattr(subprocess, n)) and n not in _NOT_STARTERS
           and not (isinstance(obj, type) and issubclass(obj, BaseException))}
    out |= {f"os.{n}" for n in dir(os) if _OS_STARTER.fullmatch(n)}
    out |= {f"{m.__name__}.{n}" for m in (asyncio, asyncio.subprocess) for n in m.__all__
            if n.startswith("create_subprocess_")}
    out |= {"pty.spawn"} if callable(getattr(pty, "spawn", None)) else set()
    return out


def test_every_entry_is_a_callable_of_the_standard_library() -> None:
    for name in RUNNERS:
        module, _, attr = name.rpartition(".")
        assert callable(getattr(importlib.import_module(module), attr, None)), name


def test_every_process_starter_of_the_standard_library_is_listed() -> None:
    assert _stdlib_starters() - set(RUNNERS) == set()
    assert len(RUNNERS) == len(set(RUNNERS))  # listed once
