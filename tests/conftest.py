"""Shared fixtures: the real framework releases the tests are written against.

They are fetched once with pip into the p2paudit cache (`$P2PAUDIT_CACHE`), exactly as
`p2paudit sites NAME==VERSION` does, and never imported.
"""

from __future__ import annotations

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
