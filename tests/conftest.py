"""Shared fixtures: the real framework releases the tests are written against.

They are fetched once with pip into the p2paudit cache (`$P2PAUDIT_CACHE`), exactly as
`p2paudit sites NAME==VERSION` does, and never imported. A test gets them only through a fixture
here (`real_sources`, `release`), and every test that asks for one, directly or through another
fixture, is marked `wheels`: `pytest -m "not wheels"` is the offline run.
"""

from __future__ import annotations

import os
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if DOWNLOADING & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.wheels)
