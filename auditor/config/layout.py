"""Megatron's pipeline layout string (`--pipeline-model-parallel-layout "Et*3|(tt|)*29,m|L"`):
how many pipeline stages it lists, PP x VPP, as megatron-core counts them.

Follows megatron/core/transformer/pipeline_parallel_layer_layout.py
PipelineParallelLayerLayout.parse_str_to_list (megatron-core 0.17.0): commas are cosmetic,
`(...)*n` then `x*n` are unrolled by regular expression, and each `|` starts a stage.
tests/realscripts/test_stacks_layout.py holds it to that function in the release itself.
"""

from __future__ import annotations

import re
from typing import Any

_UNROLL = (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)")
_LAYERS = frozenset("ELtm")
_MAX_TEXT = 1 << 16  # a layout that unrolls beyond this is not a real run's: unknown


def layout_stages(layout: Any) -> int | None:
    """The number of stages `layout` lists; None (unknown to the rules) where it is not a string
    megatron-core would accept (a character it rejects at start-up)."""
    if not isinstance(layout, str):
        return None
    text = layout.replace(",", "")
    for pattern in _UNROLL:
        text = re.sub(pattern, _unrolled, text)
    if len(text) > _MAX_TEXT or not set(text) <= _LAYERS | {"|"}:
        return None
    return len(text.split("|"))


def _unrolled(m: re.Match[str]) -> str:
    """`(ab|)*3` -> `ab|ab|ab|`; left as written where it would exceed _MAX_TEXT."""
    count = int(m.group(2))
    return m.group(1) * count if len(m.group(1)) * count <= _MAX_TEXT else m.group(0)
