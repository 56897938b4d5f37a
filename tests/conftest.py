"""Shared fixtures: the real framework releases the tests are written against.

They are fetched once with pip into the p2paudit cache (`$P2PAUDIT_CACHE`), exactly as
`p2paudit sites NAME==VERSION` does, and never imported. A test gets them through a fixture here
(`real_sources`, `release`), and every test that asks for one, directly or through another
fixture, is marked `wheels`.

Two more markers are set here, from what a test's code says (its function, the fixtures and
helpers of its module it uses, one level deep): `network` where it names a release to fetch by
pin (`megatron-core==0.17.0` and the like) or builds a wheel (pip fetches the build backend), and
`torch` where its module imports torch or it reads the installed one.
`pytest -m "not wheels and not network"` is the offline run.
"""

from __future__ import annotations

import inspect
import os
import re
import types
from collections.abc import Callable, Iterator

import pytest

from auditor import sources

REAL = {
    "megatron-core": "megatron-core==0.17.0",
    "ms-swift": "ms-swift==4.3.0",
    "mcore-bridge": "mcore-bridge==1.4.1",
}


@pytest.fixture(scope="session")
def real_sources() -> dict[str, sources.SourceSet]:
    return {name: sources.resolve(pin) for name, pin in REAL.items()}


@pytest.fixture(scope="session")
def release() -> Callable[[str], sources.SourceSet]:
    """Any release by NAME==VERSION (or a wheel, sdist or directory), downloaded once."""
    return sources.resolve


DOWNLOADING = frozenset({"real_sources", "release"})



@pytest.fixture(scope="session", autouse=True)
def wide_terminal() -> Iterator[None]:
    """Text output wraps at the terminal's width ($COLUMNS, else 80 off a terminal): the tests
    read whole lines, as on a wide terminal (tests/test_first_screen.py renders at 80 columns).
    Restored before pytest prints its own summary."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "1000"
    yield
    if before is None:
        del os.environ["COLUMNS"]
    else:
        os.environ["COLUMNS"] = before


# A string that is a release's pin (as sources.resolve and the CLI's targets take it; a pin inside
# a script's text, `pip install torch==2.10.0`, is only read), or a wheel built
# with pip (which fetches the build backend into an isolated environment).
ASKS_INDEX = re.compile(r"(?<=[\"'])(megatron-core|ms-swift|mcore-bridge|deepspeed|torch|six)==[0-9{]|\"pip\", \"wheel\"")
# The installed torch read without importing it in the test module (a launch script's `torchrun`
# is only text to the tests that parse it).
RUNS_TORCH = re.compile(r"""distribution\("torch"\)""")


def _code_of(item: pytest.Item) -> str:
    """The source of a test function and of the module-level functions, fixtures and constants
    it names (one level deep): where a test's pins and subprocess command lines are written."""
    function = getattr(item, "function", None)
    module = getattr(item, "module", None)
    if function is None or module is None:
        return ""
    names = set(function.__code__.co_names) | set(getattr(item, "fixturenames", ()))
    parts = [_source(function)]
    for name in names:
        value = getattr(module, name, None)
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            parts.append(_source(value))
        elif hasattr(value, "_get_wrapped_function"):  # a fixture of the module (pytest >= 8.4)
            parts.append(_source(value._get_wrapped_function()))
        elif isinstance(value, (str, list, tuple)):
            parts.append(repr(value))
    return "\n".join(parts)


def _source(function: Callable[..., object]) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


def _imports_torch(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    return module is not None and any(
        isinstance(v, types.ModuleType) and v.__name__.split(".")[0] == "torch" for v in vars(module).values())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if DOWNLOADING & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.wheels)
        code = _code_of(item)
        if ASKS_INDEX.search(code):
            item.add_marker(pytest.mark.network)
        if _imports_torch(item) or RUNS_TORCH.search(code):
            item.add_marker(pytest.mark.torch)
