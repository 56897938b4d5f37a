"""Megatron's hybrid layer pattern (`--hybrid-layer-pattern "M-M-|M-M*-/MM/MM"`): its layer count
and pipeline segments, as megatron-core counts them, so that num_layers and the virtual pipeline
size validate_args derives from it are known rather than left to a `--set`.

Follows megatron/core/ssm/mamba_hybrid_layer_allocation.py (megatron-core 0.17.0):
get_hybrid_total_layer_count and get_hybrid_total_pipeline_segment_count read the main pattern
(before the first `/`, which starts the MTP patterns), whose symbols _validate_pattern limits to
the layer symbols and `|`.
"""

from __future__ import annotations

from typing import Any

_LAYERS = frozenset("MG*-E")  # Symbols.VALID_LAYERS


def _main(pattern: Any) -> str | None:
    """The main pattern; None where megatron-core would refuse the pattern (ValueError)."""
    if not isinstance(pattern, str):
        return None
    main, *mtp = pattern.split("/")
    if not set(main) <= _LAYERS | {"|"} or any(not set(m) <= _LAYERS for m in mtp):
        return None
    return main


def hybrid_layers(pattern: Any) -> int | None:
    """The main decoder's layer count (get_hybrid_total_layer_count); None: unknown."""
    main = _main(pattern)
    return None if main is None else len(main.replace("|", ""))


def hybrid_segments(pattern: Any) -> int | None:
    """The main pattern's `|`-separated pipeline segments (get_hybrid_total_pipeline_segment_count)."""
    main = _main(pattern)
    return None if main is None else main.count("|") + 1
