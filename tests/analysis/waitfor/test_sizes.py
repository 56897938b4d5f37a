"""The byte widths the replay gives a trace's dtype names (auditor/analysis/waitfor/sizes.py) are
torch's own (`torch.<dtype>.itemsize` in the installed torch), and sizes read as a person reads
them."""

from __future__ import annotations

import pytest
import torch

from auditor.analysis.waitfor.sizes import DTYPE_BYTES, MiB, size_words


@pytest.mark.parametrize("name", sorted(DTYPE_BYTES))
def test_each_dtype_width_is_torchs(name: str) -> None:
    dtype = getattr(torch, name)
    assert isinstance(dtype, torch.dtype)
    assert DTYPE_BYTES[name] == dtype.itemsize


def test_sizes_in_words() -> None:
    assert size_words(24 * MiB) == "24 MiB"  # the seed's activation exchange
    assert size_words(1536) == "1.5 KiB"
    assert size_words(1023) == "1023 B"
    assert size_words(0) == "0 B"
    assert size_words(1 << 30) == "1 GiB"
    assert size_words(4 * MiB + 1) == "4 MiB"  # two decimals, trailing zeros dropped
