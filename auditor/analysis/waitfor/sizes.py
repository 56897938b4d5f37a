"""Sizes in bytes: the width of each dtype a trace names, and a size as a person reads it."""

from __future__ import annotations

MiB = 1 << 20
DTYPE_BYTES = {
    "float64": 8, "double": 8, "int64": 8, "long": 8, "complex64": 8,
    "float32": 4, "float": 4, "int32": 4, "int": 4,
    "bfloat16": 2, "float16": 2, "half": 2, "int16": 2,
    "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}


def size_words(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{round(nbytes / scale, 2):g} {unit}"
    return f"{nbytes} B"
