"""Shared fixtures: the real framework releases the tests are written against.

They are fetched once with pip into the p2paudit cache (`$P2PAUDIT_CACHE`), exactly as
`p2paudit sites NAME==VERSION` does, and never imported. A test gets them only through a fixture
here (`real_sources`, `release`), and every test that asks for one, directly or through another
fixture, is marked `wheels`: `pytest -m "not wheels"` is the offline run.
"""

from __future__ import annotations

from collections.abc import Callable

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if DOWNLOADING & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.wheels)
