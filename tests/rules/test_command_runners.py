"""rules/stacks.toml `command_runners` is the one list of the calls that start a process running
another program, read against the standard library itself: each entry names a callable there,
and every process starter of subprocess, os (exec*, spawn*, posix_spawn*, system, popen), asyncio
(create_subprocess_*, also as asyncio.subprocess spells them) and pty is listed. A starter left
out was neither a command run nor code unseen: an entry that starts the torchrun it builds with
`subprocess.getoutput(cmd)` read NOT A PIPELINE RUN (review r36-falseclean 3). A starter of
another platform (os.startfile, Windows only) is read in typeshed's stub of the module, as mypy
ships it. `command_methods` are asyncio's event loop methods that start a program, and each
`[[command_library]]` a third-party package no allow-list reads as inert."""

from __future__ import annotations

import ast
import asyncio
import asyncio.subprocess
import importlib
import inspect
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import mypy

from auditor import rulebook

RULES = rulebook.load("stacks").data
RUNNERS = RULES["no_pipeline"]["command_runners"]
# typeshed's stub of os, every platform's functions in it (`if sys.platform == "win32": def startfile`)
OS_STUB = {n.name for n in ast.walk(ast.parse((Path(mypy.__file__).parent / "typeshed" / "stdlib" / "os" /
                                               "__init__.pyi").read_text(encoding="utf-8")))
           if isinstance(n, ast.FunctionDef)}
# subprocess's public callables that start nothing: a result record (its exceptions are excluded
# by their type)
_NOT_STARTERS = {"CompletedProcess"}
_OS_STARTER = re.compile(r"exec[lv]p?e?|spawn[lv]p?e?|posix_spawnp?|system|popen|startfile")


def _stdlib_starters() -> set[str]:
    out = {f"subprocess.{n}" for n in subprocess.__all__
           if callable(obj := getattr(subprocess, n)) and n not in _NOT_STARTERS
           and not (isinstance(obj, type) and issubclass(obj, BaseException))}
    out |= {f"os.{n}" for n in {*dir(os), *OS_STUB} if _OS_STARTER.fullmatch(n)}
    out |= {f"{m.__name__}.{n}" for m in (asyncio, asyncio.subprocess) for n in m.__all__
            if n.startswith("create_subprocess_")}
    out |= {"pty.spawn"} if callable(getattr(pty, "spawn", None)) else set()
    return out


def test_every_entry_is_a_callable_of_the_standard_library() -> None:
    for name in RUNNERS:
        module, _, attr = name.rpartition(".")
        here = getattr(importlib.import_module(module), attr, None)
        assert callable(here) or (here is None and module == "os" and attr in OS_STUB), name


def test_every_process_starter_of_the_standard_library_is_listed() -> None:
    assert _stdlib_starters() - set(RUNNERS) == set()
    assert len(RUNNERS) == len(set(RUNNERS))  # listed once


def test_os_startfile_is_listed_on_every_platform() -> None:
    """Not on this platform's os (Linux): listed from the stub, so a Windows entry is read too."""
    assert "os.startfile" in RUNNERS and "startfile" in OS_STUB


def test_every_event_loop_starter_is_a_command_method() -> None:
    methods = RULES["no_pipeline"]["command_methods"]
    loop = asyncio.AbstractEventLoop
    assert all(inspect.iscoroutinefunction(getattr(loop, m, None)) for m in methods), methods
    assert {n for n in dir(loop) if n.startswith("subprocess_")} == set(methods)


def test_command_libraries_are_third_party_and_not_read_as_inert() -> None:
    """A library listed here and in an allow-list (`[no_pipeline] packages`) would read inert."""
    libraries = RULES["command_library"]
    modules = [m for lib in libraries for m in lib["modules"]]
    assert {"sh", "plumbum", "invoke", "fabric"} <= {lib["name"] for lib in libraries}
    assert len(modules) == len(set(modules))
    allowed = set(RULES["no_pipeline"]["packages"]) | set(RULES["no_pipeline"].get("modules", []))
    assert not {m.split(".")[0] for m in modules} & (set(sys.stdlib_module_names) | allowed)


def test_package_starters_start_processes_in_the_installed_package() -> None:
    """Each `[[package_starter]]` names a callable of its installed package whose own code starts
    processes: psutil.Popen builds a subprocess.Popen; torch's launcher functions reach
    elastic_launch / launch_agent / start_processes (torch/distributed/run.py, launcher/api.py)."""
    starters = {p["name"]: p["starters"] for p in RULES["package_starter"]}
    assert {"psutil", "torch"} <= set(starters)
    for names in starters.values():
        for name in names:
            module, _, attr = name.rpartition(".")
            here = getattr(importlib.import_module(module), attr)
            assert callable(here), name
            text = inspect.getsource(here)
            assert re.search(r"subprocess\.Popen\(|elastic_launch|launch_agent|\b(run|launch)\(|start_processes|"
                             r"LocalElasticAgent|PContext", text), name
